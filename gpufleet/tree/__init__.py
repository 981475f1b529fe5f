"""The synth tree: written from the recorded registrations, read back (whole or refused) for check and diff, and
where synth may write one."""

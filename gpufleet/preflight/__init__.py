"""The checks `gpufleet preflight` runs against the AWS account (read-only), and the clients it runs them with."""

"""Pure builders of Kubernetes objects and Helm values (plain dicts), shared by the stage builders."""

# The audit plugin is registered through the pytest11 entry point in pyproject.toml (fairness_core.pytest_plugin).

"""What pytest loads with the audits' folder: a clear usage error when the fairness audit plugin is not loaded.

The plugin registers itself through its ``pytest11`` entry point; with
``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` set it is not loaded, its collection,
options and fixtures are missing, and every audit test would fail on a
fixture it cannot find.  This hook runs after collection either way and
turns that into one message that says how to load it.
"""

import pytest

PLUGIN = "fairness_core.pytest_plugin"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(getattr(plugin, "__name__", None) == PLUGIN for plugin in config.pluginmanager.get_plugins()):
        raise pytest.UsageError(f"The fairness audit plugin is not loaded (is PYTEST_DISABLE_PLUGIN_AUTOLOAD set?), so "
                                f"the audits cannot run. Load it explicitly: pytest -p {PLUGIN} --pyargs "
                                f"fairness_core.audits --model=...")

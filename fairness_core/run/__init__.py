"""One audit run, put together: the option table, the start-up checks, the session, the reporter, the demo names.

Both doors (``pytest_plugin`` and ``cli``) build the run from here and call the
same checks, once; nothing below this package knows pytest's hooks or the
command line.
"""

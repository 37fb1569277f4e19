"""The real Nova and Placement backend of `consolidator fake-cloud serve --backend nova`.

Only `options` may be imported by the rest of the project: every other module here imports
Nova, whose test package monkey-patches the process with eventlet. The server therefore runs
as `python -m consolidator.emulators.realnova`, in a process of its own.
"""

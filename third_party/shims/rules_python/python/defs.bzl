"""rules_python's front door, forwarding to Bazel 4.2.3's native Python rules.

The real rules_python cannot be fetched offline; BUILD files load this file
exactly as they would load rules_python's, so moving to Bazel 7+ and the real
rules changes no BUILD file.
"""

def py_binary(**kwargs):
    native.py_binary(**kwargs)

def py_library(**kwargs):
    native.py_library(**kwargs)

def py_test(**kwargs):
    native.py_test(**kwargs)

def py_runtime(**kwargs):
    native.py_runtime(**kwargs)

"""A hermetic Python environment built from a hash-locked requirements file.

`python_env` is a repository rule: it creates a virtual environment from exactly
the lock (`pip install --require-hashes --no-deps`, no system site-packages), once
per lock content on a machine (shared by every output base and clone, see
_CREATE_SHARED_ENV), registers its interpreter as the Python toolchain and
generates a rules_python-style hub:

    load("@pypi//:requirements.bzl", "requirement")
    py_library(..., deps = [requirement("numpy")])

Only the lock's content feeds the environment: editing it refetches the
repository, and because the interpreter wrapper embeds the lock's sha256, every
Python action reruns; nothing else does. Nothing absolute is checked in or
written into the interpreter wrapper, so action keys do not depend on where a
workspace or its output base lives.
"""

_REQUIRED_VERSION = "3.11"

def _normalize(name):
    # PEP 503 normalisation, as rules_python does for requirement() labels.
    return name.lower().replace("-", "_").replace(".", "_")

def _locked_packages(lock_text):
    """Names of the packages pinned in a pip-compile lock file."""
    names = []
    for line in lock_text.splitlines():
        if not line or line[0] in " #-\t":
            continue
        if "==" in line:
            names.append(line.split("==")[0].strip())
    return names

def _fail(msg):
    fail("python_env: " + msg)

# $1 store, $2 key, $3 python, $4 lock. Under flock: reuse <store>/<key> when it is marked
# complete, else (re)create it and mark it.
_CREATE_SHARED_ENV = """
set -eu
store="$1"; key="$2"; python="$3"; lock="$4"
mkdir -p "$store"
exec 9>"$store/$key.lock"
flock 9
env="$store/$key"
if [ -f "$env/.complete" ]; then exit 0; fi
rm -rf "$env"
"$python" -m venv "$env"
"$env/bin/python3" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps --no-compile -r "$lock"
printf '%s\n' "$key" > "$env/.complete"
"""

def _python_env_impl(ctx):
    lock = ctx.path(ctx.attr.lock)  # path(Label) makes the lock a refetch trigger
    lock_text = ctx.read(lock)
    lock_digest = ctx.execute(["sha256sum", str(lock)]).stdout.split(" ")[0]

    python = ctx.which(ctx.attr.python)
    if python == None:
        _fail("no `%s` on PATH; install CPython %s (Debian: apt-get install python3.11)" % (ctx.attr.python, _REQUIRED_VERSION))
    version = ctx.execute([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).stdout.strip()
    if version != _REQUIRED_VERSION:
        _fail("%s is Python %s, but %s is locked for Python %s" % (python, version, ctx.attr.lock, _REQUIRED_VERSION))

    # One environment per lock content and Python version, shared by every output base and
    # clone on this machine: content-addressed under the user's cache, created under an
    # exclusive lock (another Bazel server creating the same one waits, then reuses it) and
    # marked complete only at the end, so a half-made one is never used and is recreated.
    # `venv` in this repository is a symlink to it; nothing absolute reaches an action.
    cache = ctx.os.environ.get("XDG_CACHE_HOME") or (ctx.os.environ.get("HOME", "/root") + "/.cache")
    store = ctx.attr.store or (cache + "/riscv-ml-toolchain/python-envs")
    key = "%s-py%s" % (lock_digest[:24], version)
    ctx.report_progress("creating or reusing the shared environment %s/%s (several minutes on a cold pip cache)" % (store, key))
    result = ctx.execute(
        ["sh", "-c", _CREATE_SHARED_ENV, "python_env", store, key, python, str(lock)],
        timeout = ctx.attr.timeout,
        quiet = True,
        environment = {"PIP_NO_INPUT": "1", "PYTHONDONTWRITEBYTECODE": "1"},
    )
    if result.return_code != 0:
        errors = [l for l in result.stderr.strip().splitlines() if "ERROR" in l or "error" in l]
        last = (errors or result.stderr.strip().splitlines() or ["(no output)"])[-1]
        _fail("could not create the environment for %s in %s/%s (is the package registry reachable?): %s" % (ctx.attr.lock, store, key, last.strip()))
    ctx.symlink(store + "/" + key, "venv")

    # The interpreter is found relative to the wrapper's real location, so the
    # wrapper (an input of every Python action) is identical in every clone.
    ctx.file("python3", content = """#!/bin/sh
# Interpreter of the locked environment; requirements.lock sha256 {digest}
# (the digest makes every Python action depend on the lock's content).
here="$(dirname "$(readlink -f "$0")")"
PYTHONNOUSERSITE=1 exec "$here/venv/bin/python3" "$@"
""".format(digest = lock_digest), executable = True)

    packages = sorted([_normalize(n) for n in _locked_packages(lock_text)])
    ctx.file("BUILD.bazel", content = """\
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

package(default_visibility = ["//visibility:public"])

exports_files(["python3"])

py_runtime(
    name = "py3_runtime",
    interpreter = ":python3",
    python_version = "PY3",
    # The launcher stub only locates runfiles and execs :python3; strict
    # action env has no `python` on PATH, Debian always has python3.
    stub_shebang = "#!/usr/bin/env python3",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "python_toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
""")
    for name in packages:
        # Packages live in the interpreter's site-packages; these targets only
        # declare which third-party packages each target uses.
        ctx.file(name + "/BUILD.bazel", content = """\
package(default_visibility = ["//visibility:public"])

py_library(name = "{name}")
""".format(name = name))

    ctx.file("requirements.bzl", content = '''\
"""Generated from {lock}: requirement() as in rules_python."""

_PACKAGES = {packages}

def _normalize(name):
    return name.lower().replace("-", "_").replace(".", "_")

def requirement(name):
    key = _normalize(name)
    if key not in _PACKAGES:
        fail("requirement(%r): %r is not in {lock}; add it to requirements.in and relock" % (name, name))
    return "@{repo}//%s" % key

all_requirements = ["@{repo}//%s" % p for p in _PACKAGES]
'''.format(lock = ctx.attr.lock, packages = repr(packages), repo = ctx.name))

python_env = repository_rule(
    implementation = _python_env_impl,
    attrs = {
        "lock": attr.label(mandatory = True, allow_single_file = True, doc = "A pip-compile --generate-hashes lock file."),
        "python": attr.string(default = "python3.11", doc = "Interpreter on PATH used to create the environment."),
        "timeout": attr.int(default = 3600),
        "store": attr.string(doc = "Directory of the shared environments (default: $XDG_CACHE_HOME or ~/.cache, /riscv-ml-toolchain/python-envs)."),
    },
    environ = ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "XDG_CACHE_HOME", "HOME"],
    doc = "Creates a virtual environment from a hash-locked requirements file and exposes it as a Python toolchain.",
)

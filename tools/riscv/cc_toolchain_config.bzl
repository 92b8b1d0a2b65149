"""A cc_toolchain for riscv64 Linux (lp64d) from Debian's riscv64-linux-gnu-gcc, pinned.

The compiler, binutils, riscv64 glibc, linux headers and libgcc are Debian bookworm
packages at exact versions and SHA256s, fetched by Bazel into @riscv64_gcc
(WORKSPACE; tools/debian/debian_package.bzl with tree = True), not the machine's
/usr/bin/riscv64-linux-gnu-*. Each tool path is a script in ./bin that runs the
repository's program; the driver runs relocated from the repository
(`-no-canonical-prefixes`: it finds cc1, as, ld, headers and crt files next to
itself by the path it was run by, inside the action's sandbox) and links against
the repository's glibc (`--sysroot`). Every file of @riscv64_gcc is an input of
the compile and link actions (BUILD.bazel), so another pin is another action key.

Binaries link dynamically against that riscv64 glibc (dlopen needs a dynamic
binary); run them with `qemu-riscv64 -L <sysroot>`, the sysroot being
@riscv64_gcc's root/usr/riscv64-linux-gnu (//tools/riscv:sysroot, the same
pinned libc6-riscv64-cross and libgcc-s1-riscv64-cross).
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "ACTION_NAMES")
load(
    "@bazel_tools//tools/cpp:cc_toolchain_config_lib.bzl",
    "feature",
    "flag_group",
    "flag_set",
    "tool_path",
)

# Relative to this package (Bazel 4 tool paths): ./bin's scripts run @riscv64_gcc's programs.
_PREFIX = "bin/riscv64-linux-gnu-"

# The repository's tree, from the execroot (gcc runs in the action's sandbox, by a relative path).
_TREE = "external/riscv64_gcc/root"

# gcc finds its parts from the path it is run by, not the real path of its file (the sandbox
# links each input to the output base); the .d files then name headers inside the sandbox.
_RELOCATED = ["-no-canonical-prefixes", "--sysroot=" + _TREE]

_COMPILE_ACTIONS = [
    ACTION_NAMES.c_compile,
    ACTION_NAMES.cpp_compile,
    ACTION_NAMES.assemble,
    ACTION_NAMES.preprocess_assemble,
]

_LINK_ACTIONS = [
    ACTION_NAMES.cpp_link_executable,
    ACTION_NAMES.cpp_link_dynamic_library,
    ACTION_NAMES.cpp_link_nodeps_dynamic_library,
]

def _impl(ctx):
    tools = {
        "gcc": "gcc",
        "ld": "ld",
        "ar": "ar",
        "cpp": "cpp",
        "nm": "nm",
        "objcopy": "objcopy",
        "objdump": "objdump",
        "strip": "strip",
        "gcov": "gcov",
    }
    features = [
        feature(
            name = "default_flags",
            enabled = True,
            flag_sets = [
                flag_set(
                    actions = _COMPILE_ACTIONS,
                    flag_groups = [flag_group(flags = _RELOCATED + [
                        "-fno-canonical-system-headers",
                        "-march=rv64gc",
                        "-mabi=lp64d",
                        "-O2",
                        "-Wall",
                        # Reproducible: no build paths or dates in the output.
                        "-Wno-builtin-macro-redefined",
                        "-D__DATE__=\"redacted\"",
                        "-D__TIMESTAMP__=\"redacted\"",
                        "-D__TIME__=\"redacted\"",
                    ])],
                ),
                flag_set(
                    actions = _LINK_ACTIONS,
                    flag_groups = [flag_group(flags = _RELOCATED + ["-ldl", "-Wl,--build-id=none"])],
                ),
            ],
        ),
        feature(name = "supports_pic", enabled = True),
        feature(name = "supports_dynamic_linker", enabled = True),
    ]
    return cc_common.create_cc_toolchain_config_info(
        ctx = ctx,
        features = features,
        # Inside the repository (inputs of every compile action): gcc's own headers, glibc's
        # and linux's. No directory of the machine: --sysroot replaces its /usr/include.
        cxx_builtin_include_directories = [
            _TREE + "/usr/lib/gcc-cross/riscv64-linux-gnu/12/include",
            _TREE + "/usr/riscv64-linux-gnu/include",
        ],
        toolchain_identifier = "riscv64-linux-gnu-gcc",
        host_system_name = "x86_64-unknown-linux-gnu",
        target_system_name = "riscv64-unknown-linux-gnu",
        target_cpu = "riscv64",
        target_libc = "glibc",
        compiler = "gcc",
        abi_version = "lp64d",
        abi_libc_version = "glibc",
        tool_paths = [tool_path(name = k, path = _PREFIX + v) for k, v in tools.items()],
    )

riscv64_cc_toolchain_config = rule(
    implementation = _impl,
    attrs = {},
    provides = [CcToolchainConfigInfo],
)

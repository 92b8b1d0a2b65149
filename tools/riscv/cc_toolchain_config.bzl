"""A cc_toolchain for riscv64 Linux (lp64d) from Debian's riscv64-linux-gnu-gcc.

Binaries link dynamically against the riscv64 glibc in /usr/riscv64-linux-gnu
(dlopen needs a dynamic binary); run them with
`qemu-riscv64 -L /usr/riscv64-linux-gnu` (@qemu_user_backport).
Needs Debian's gcc-riscv64-linux-gnu, binutils-riscv64-linux-gnu and
libc6-dev-riscv64-cross.
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "ACTION_NAMES")
load(
    "@bazel_tools//tools/cpp:cc_toolchain_config_lib.bzl",
    "feature",
    "flag_group",
    "flag_set",
    "tool_path",
)

_PREFIX = "/usr/bin/riscv64-linux-gnu-"

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
                    flag_groups = [flag_group(flags = [
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
                    flag_groups = [flag_group(flags = ["-ldl", "-Wl,--build-id=none"])],
                ),
            ],
        ),
        feature(name = "supports_pic", enabled = True),
        feature(name = "supports_dynamic_linker", enabled = True),
    ]
    return cc_common.create_cc_toolchain_config_info(
        ctx = ctx,
        features = features,
        cxx_builtin_include_directories = [
            "/usr/lib/gcc-cross/riscv64-linux-gnu",
            "/usr/riscv64-linux-gnu/include",
            "/usr/include",
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

"""The external repositories the project needs, for its own WORKSPACE and for a workspace that
loads the project as a repository (README, "Use it from your own workspace"):

    local_repository(name = "riscv_ml_toolchain", path = "path/to/riscv-ml-toolchain")
    load("@riscv_ml_toolchain//:deps.bzl", "riscv_ml_toolchain_dependencies")
    riscv_ml_toolchain_dependencies(path = "path/to/riscv-ml-toolchain")

The repository must be named `riscv_ml_toolchain` (its tools find their runfiles under that name)
and the names below are global: the project's BUILD files refer to @pypi, @llvm19,
@riscv64_gcc, ... Repositories are fetched when a build first needs them.
"""

load("//tools/python:python_env.bzl", "python_env")
load("//tools/debian:debian_package.bzl", "debian_package")
load("//tools/debian:debian_source.bzl", "debian_source")

# libLLVM and the shared libraries it loads, pinned (Debian bookworm), as @llvm19's and @clang19's
# tools both need them: name in the repository -> path in the packages, and package -> [version, sha256].
_LLVM19_LIBRARY_EXPORTS = {
    "lib/libLLVM.so.19.1": "usr/lib/x86_64-linux-gnu/libLLVM.so.19.1",
    "lib/libbsd.so.0": "usr/lib/x86_64-linux-gnu/libbsd.so.0.11.7",
    "lib/libedit.so.2": "usr/lib/x86_64-linux-gnu/libedit.so.2.0.70",
    "lib/libicudata.so.72": "usr/lib/x86_64-linux-gnu/libicudata.so.72.1",
    "lib/libicuuc.so.72": "usr/lib/x86_64-linux-gnu/libicuuc.so.72.1",
    "lib/libxml2.so.2": "usr/lib/x86_64-linux-gnu/libxml2.so.2.9.14",
    "lib/libz3.so.4": "usr/lib/x86_64-linux-gnu/libz3.so.4",
}

_LLVM19_LIBRARIES = {
    "libbsd0": ["0.11.7-2", "bb31cc8b40f962a85b2cec970f7f79cc704a1ae4bad24257a822055404b2c60b"],
    "libedit2": ["3.1-20221030-2", "1cf14abf2716d3279db12d0657a5737cf70074a1e71d3bdf73206625e3c89ce6"],
    "libicu72": ["72.1-3+deb12u1", "f7f6f99c6d7b025914df2447fc93e11d22c44c0c8bdd8b6f36691c9e7ddcef88"],
    "libllvm19": ["1:19.1.7-3~deb12u1", "6edf3a8b28495cdba883d9760e0dca1a81983fc497a5f989dc64d0d96d23b4aa"],
    "libxml2": ["2.9.14+dfsg-1.3~deb12u6", "4460e39dda10a815881374217cde08474747cfa018358cd8612c14b390eff53b"],
    "libz3-4": ["4.8.12-3.1", "6221ca25ad5abcfbe1965801029d85a88b4775320384b4b716de8fab7a4d2f7a"],
}

def _in_project(path, relative):
    """`relative` (a path inside the project) as seen from the calling workspace."""
    return relative if path in ("", ".") else path.rstrip("/") + "/" + relative

def riscv_ml_toolchain_dependencies(path = "."):
    """Declares every repository the project's builds use and registers its toolchains.

    Args:
      path: where the project is, relative to the calling workspace (or absolute): "." in the
        project's own WORKSPACE, the `path` of its local_repository elsewhere.
    """
    # @bazel_tools refers to these three and would download them; small in-repo
    # shims stand in (see third_party/shims/README.md).
    native.local_repository(
        name = "rules_cc",
        path = _in_project(path, "third_party/shims/rules_cc"),
    )

    native.local_repository(
        name = "rules_java",
        path = _in_project(path, "third_party/shims/rules_java"),
    )

    native.local_repository(
        name = "remote_coverage_tools",
        path = _in_project(path, "third_party/shims/remote_coverage_tools"),
    )

    # BUILD files load Python rules from @rules_python//python:defs.bzl, as in any
    # rules_python project; offline it forwards to the native rules.
    native.local_repository(
        name = "rules_python",
        path = _in_project(path, "third_party/shims/rules_python"),
    )

    # The locked Python environment (torch CPU, torch-mlir, TensorFlow, IREE, xDSL,
    # ZigZag, ...), created from requirements.lock, registered as the toolchain.

    python_env(
        name = "pypi",
        lock = Label("//:requirements.lock"),
    )

    native.register_toolchains("@pypi//:python_toolchain")

    # The BuildGrid remote cache server (//tools/cache_server), a second locked
    # environment: buildgrid's protobuf/grpcio requirements cannot co-install with
    # the main lock's TensorFlow pins. Only `bazel run //tools/cache_server` (and
    # its test) fetch it; its toolchain is NOT registered, so nothing else uses it.
    python_env(
        name = "buildgrid_env",
        lock = Label("//tools/cache_server:requirements.lock"),
    )

    # qemu 10 for running riscv64 RVV code without a plugin (the dispatch tests,
    # hal_runner_test). Debian bookworm's qemu 7.2 aborts translating some RVV code
    # IREE emits ("decode_save_opc: Assertion `ctx->insn_start != NULL'", QEMU issue
    # 1441, fixed in 8.1: bilinear/nearest upsampling's index arithmetic, Mish/ELU,
    # some GELU matmuls and softmax tiles). bookworm-backports' qemu-user is static
    # and loads no TCG plugin, so perf/ measures with a qemu-riscv64 10.0.2 built
    # from source with plugins (//tools/qemu, from @qemu_source below).

    debian_package(
        name = "qemu_user_backport",
        exports = {"qemu-riscv64": "usr/bin/qemu-riscv64"},
        package = "qemu-user",
        sha256 = "10a2dec99f2b2d0b1097ff0375aea35b89322d6631fc96700511b02e05bf6fef",
        suite = "bookworm-backports",
        version = "1:10.0.2+ds-2+deb13u1~bpo12+1",
    )

    # llvm-19's llvm-mc, llvm-mca, opt and llc (bookworm, 19.1.7), pinned with the shared libraries
    # they load that a base Debian system lacks (libLLVM and its libz3, libxml2 + ICU, libedit +
    # libbsd; `ldd` checks the closure at fetch). perf/ runs them from here (--llvm-bin, perf/defs.bzl
    # `_llvm`): each tool is a wrapper putting @llvm19//lib first on LD_LIBRARY_PATH, and every file
    # is an input of the actions that run them (@llvm19//:all).
    debian_package(
        name = "llvm19",
        exports = dict(_LLVM19_LIBRARY_EXPORTS, **{
            "llc": "usr/lib/llvm-19/bin/llc",
            "llvm-mc": "usr/lib/llvm-19/bin/llvm-mc",
            "llvm-mca": "usr/lib/llvm-19/bin/llvm-mca",
            "opt": "usr/lib/llvm-19/bin/opt",
        }),
        libraries = _LLVM19_LIBRARIES,
        package = "llvm-19",
        programs = [
            "llc",
            "llvm-mc",
            "llvm-mca",
            "opt",
        ],
        sha256 = "f91492c5b361ff12f540b9f6145cf638b5e0fb3f145fceabd6c4b9540eab4bf9",
        suite = "bookworm",
        version = "1:19.1.7-3~deb12u1",
    )

    # The riscv64 cross toolchain (//tools/riscv's cc_toolchain) and the riscv64 guest sysroot that
    # qemu-riscv64 -L runs its programs with: Debian bookworm's cross gcc 12 and binutils 2.40 with
    # the riscv64 glibc 2.36, linux headers and libgcc, every file of each package under root/
    # (tree = True), plus the host libraries cc1, as and ld load that a base Debian system lacks
    # (libisl, libmpc, libmpfr; libjansson and libbinutils' libsframe). The versions are those
    # tools/bazel used to apt-get, so the riscv64 runner is the same bytes (the tuning records key
    # on it). gcc runs relocated from the tree (-no-canonical-prefixes, --sysroot=<repo>/root), and
    # every file is an input of the riscv64 compile and link actions (//tools/riscv:BUILD.bazel).
    debian_package(
        name = "riscv64_gcc",
        exports = {
            "riscv64-linux-gnu-ar": "usr/bin/riscv64-linux-gnu-ar",
            "riscv64-linux-gnu-cpp": "usr/bin/riscv64-linux-gnu-cpp-12",
            "riscv64-linux-gnu-gcc": "usr/bin/riscv64-linux-gnu-gcc-12",
            "riscv64-linux-gnu-gcov": "usr/bin/riscv64-linux-gnu-gcov-12",
            "riscv64-linux-gnu-ld": "usr/bin/riscv64-linux-gnu-ld.bfd",
            "riscv64-linux-gnu-nm": "usr/bin/riscv64-linux-gnu-nm",
            "riscv64-linux-gnu-objcopy": "usr/bin/riscv64-linux-gnu-objcopy",
            "riscv64-linux-gnu-objdump": "usr/bin/riscv64-linux-gnu-objdump",
            "riscv64-linux-gnu-readelf": "usr/bin/riscv64-linux-gnu-readelf",
            "riscv64-linux-gnu-strip": "usr/bin/riscv64-linux-gnu-strip",
        },
        libraries = {
            "libbinutils": ["2.40-2", "fcf55b99e5f8a78f3c8ce9b6957f1024f394cf20c196b100d308a57e43547710"],
            "libisl23": ["0.25-1.1", "ebff0b2f8b220c74224197523019366e97ee4770d464bebc48e4865114e4da0e"],
            "libjansson4": ["2.14-2", "3fc9742f9f1a37bcb9931df6074b4d1483419ef832ad5349f47323e75fc27864"],
            "libmpc3": ["1.3.1-1", "d7f79544790e44f9b0c8cb9034a18c58d37f8702a15f32539050718679e52f80"],
            "libmpfr6": ["4.2.0-1", "37b7a2b4e78890b6a074777f27b96c84f58e81558ba08410c2b6c0ca4a4ad77b"],
        },
        library_path = ["usr/lib/x86_64-linux-gnu"],
        package = "gcc-12-riscv64-linux-gnu",
        packages = {
            "binutils-riscv64-linux-gnu": ["2.40-2", "b17d62dc462573702aa3f72919ea24d2b976c843a22a25b881fba8bfbbc92825"],
            "cpp-12-riscv64-linux-gnu": ["12.2.0-13cross1", "2a1f563c058ecb78bb84c3de2ce948001d9017b36958d33b5b7671fe00458961"],
            "libc6-dev-riscv64-cross": ["2.36-8cross1", "0c1db013abf431ecff01ec900aa2842a3e1cf5bee62ed91b6b047c43110f3157"],
            "libc6-riscv64-cross": ["2.36-8cross1", "93f10d4bb0f279812121194e7dbdb61b14a70065d9cd6f25de4b08899a878195"],
            "libgcc-12-dev-riscv64-cross": ["12.2.0-13cross1", "55d37f04d64ac844ef1f0018f7fc66f6622cd6aed5330468a55c70eafc249364"],
            "libgcc-s1-riscv64-cross": ["12.2.0-13cross1", "697c52d3d58795f0fddd88fa13df1882a70e64d1e66bfed743637882f59d5719"],
            "linux-libc-dev-riscv64-cross": ["6.1.4-1cross1", "51c8f1429724107fc9d34d584bdf3fed64e42cc302f65a4a0cf48cc9f0ece0af"],
        },
        programs = [
            "riscv64-linux-gnu-ar",
            "riscv64-linux-gnu-cpp",
            "riscv64-linux-gnu-gcc",
            "riscv64-linux-gnu-gcov",
            "riscv64-linux-gnu-ld",
            "riscv64-linux-gnu-nm",
            "riscv64-linux-gnu-objcopy",
            "riscv64-linux-gnu-objdump",
            "riscv64-linux-gnu-readelf",
            "riscv64-linux-gnu-strip",
        ],
        sha256 = "54041ac36e511e11caf83b93671fb538394a15e97247cbe9f26123ad71d2beba",
        suite = "bookworm",
        tree = True,
        version = "12.2.0-13cross1",
    )

    # The riscv64 C toolchain (on @riscv64_gcc) for the platform //tools/riscv:riscv64_linux, which
    # riscv64_binary's transition builds for (with C toolchain resolution).
    native.register_toolchains(str(Label("//tools/riscv:riscv64_linux_toolchain")))

    # QEMU 10.0.2's upstream source, from Debian's qemu source package in
    # bookworm-backports (the .orig tarball: upstream minus firmware blobs and
    # python/wheels), pinned by SHA256: the whole tarball (@qemu_source//:orig_tarball)
    # that //tools/qemu:qemu-riscv64 is built from, the TCG plugin header
    # (@qemu_source//:plugin_header, for //perf:libinsn_classes.so) and QEMU's own
    # cache-simulation plugin (@qemu_source//:libcache.so, for //perf:cache_sim_test).
    # Both need glib (libglib2.0-dev, which tools/bazel installs). Built as upstream
    # ships it: Debian's patches are not applied.

    debian_source(
        name = "qemu_source",
        build_file = Label("//tools/debian:qemu_source.BUILD"),
        keep_tarball = True,
        orig_tarball = "qemu_10.0.2+ds.orig.tar.xz",
        package = "qemu",
        pkg_config = ["glib-2.0"],
        sha256 = "0901da33844a331bf8b3602b9c1fbd178e60b737c8e3ade678255bd090c9b9f1",
        srcs = [
            "COPYING",
            "LICENSE",
            "VERSION",
            "contrib/plugins/cache.c",
            "include/qemu/qemu-plugin.h",
        ],
        strip_prefix = "qemu-10.0.2",
    )

    # meson 1.5.0 and pycotap 1.3.1 for QEMU 10.0.2's configure (upstream bundles them
    # as wheels; Debian's +ds tarball does not), hash-locked; only //tools/qemu's build
    # action runs this interpreter (its toolchain is not registered).
    python_env(
        name = "qemu_build_env",
        lock = Label("//tools/qemu:requirements.lock"),
    )

    # clang-19 (bookworm, 19.1.7: the same LLVM as @llvm19), for the "naive C loops + LLVM's
    # autovectorizer" peer of //peers (issue 50): compiles one include-free kernel file for
    # riscv64 with RVV; linked by the project's riscv64 toolchain. Pinned with the libraries
    # it loads that a base Debian system lacks (`ldd` checks the closure at fetch).
    debian_package(
        name = "clang19",
        exports = dict(_LLVM19_LIBRARY_EXPORTS, **{
            "clang": "usr/lib/llvm-19/bin/clang",
            "lib/libclang-cpp.so.19.1": "usr/lib/x86_64-linux-gnu/libclang-cpp.so.19.1",
        }),
        libraries = dict(_LLVM19_LIBRARIES, **{
            "libclang-cpp19": ["1:19.1.7-3~deb12u1", "5daa784e1d747db320c16604729ffa805e6bfd72d3ac0b7cb0ee5f1a7ebc8aae"],
        }),
        package = "clang-19",
        programs = ["clang"],
        sha256 = "89ab931a9bbfd567a76df3141af5d5ec67b01d800150e614f2c9bf4671da9b08",
        suite = "bookworm",
        version = "1:19.1.7-3~deb12u1",
    )

    # Peers on the same RISC-V yardstick (//peers, issue 50): Debian trixie's riscv64 OpenBLAS
    # 0.3.29 and BLIS 1.1 (serial builds: one core, like the measured dispatches) with cblas.h /
    # blis.h, and the trixie riscv64 runtime they link (glibc 2.41, libgcc_s, libgfortran,
    # libstdc++) laid out as a sysroot for `qemu-riscv64 -L` (sysroot/...). Nothing is installed
    # on the host: `arch` fetches riscv64 packages with a private apt state.
    # Milestone 2 adds ONNX Runtime 1.21 (libonnxruntime1.21, onnxruntime_c_api.h from
    # libonnxruntime-dev) and the closure of shared libraries libonnxruntime.so.1.21 loads (its
    # .deb Depends, each read for NEEDED: libonnx + libonnx_proto, protobuf 3.21, re2, the abseil
    # libraries re2 and ORT name, zlib), each pinned; the libraries are exported by soname.
    # Milestone 3 adds XNNPACK (libxnnpack0.20241108, xnnpack.h from libxnnpack-dev) and the one
    # library it needs beyond glibc and libgcc_s (its .deb Depends and NEEDED: libpthreadpool0;
    # pthreadpool.h, which xnnpack.h includes, from libpthreadpool-dev).
    debian_package(
        name = "peers_riscv64",
        arch = "riscv64",
        exports = {
            "include/blis/blis.h": "usr/include/riscv64-linux-gnu/blis-serial/blis.h",
            "include/onnxruntime/onnxruntime_c_api.h": "usr/include/onnxruntime/onnxruntime_c_api.h",
            "include/openblas/cblas.h": "usr/include/riscv64-linux-gnu/openblas-serial/cblas.h",
            "include/openblas/openblas_config.h": "usr/include/riscv64-linux-gnu/openblas-serial/openblas_config.h",
            "include/xnnpack/pthreadpool.h": "usr/include/pthreadpool.h",
            "include/xnnpack/xnnpack.h": "usr/include/xnnpack.h",
            "sysroot/lib/ld-linux-riscv64-lp64d.so.1": "usr/lib/riscv64-linux-gnu/ld-linux-riscv64-lp64d.so.1",
            "sysroot/usr/lib/riscv64-linux-gnu/blis-serial/libblis.so.4": "usr/lib/riscv64-linux-gnu/blis-serial/libblis.so.4",
            "sysroot/usr/lib/riscv64-linux-gnu/libXNNPACK.so.0.20241108": "usr/lib/riscv64-linux-gnu/libXNNPACK.so.0.20241108",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_base.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_base.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_city.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_city.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_debugging_internal.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_debugging_internal.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_decode_rust_punycode.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_decode_rust_punycode.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_demangle_internal.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_demangle_internal.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_demangle_rust.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_demangle_rust.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_examine_stack.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_examine_stack.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_graphcycles_internal.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_graphcycles_internal.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_hash.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_hash.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_int128.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_int128.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_kernel_timeout_internal.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_kernel_timeout_internal.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_log_globals.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_log_globals.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_log_internal_format.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_log_internal_format.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_log_internal_globals.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_log_internal_globals.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_log_internal_log_sink_set.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_log_internal_log_sink_set.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_log_internal_message.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_log_internal_message.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_log_internal_proto.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_log_internal_proto.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_log_sink.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_log_sink.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_low_level_hash.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_low_level_hash.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_malloc_internal.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_malloc_internal.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_raw_hash_set.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_raw_hash_set.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_raw_logging_internal.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_raw_logging_internal.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_spinlock_wait.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_spinlock_wait.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_stacktrace.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_stacktrace.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_str_format_internal.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_str_format_internal.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_strerror.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_strerror.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_string_view.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_string_view.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_strings.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_strings.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_strings_internal.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_strings_internal.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_symbolize.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_symbolize.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_synchronization.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_synchronization.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_throw_delegate.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_throw_delegate.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_time.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_time.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_time_zone.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_time_zone.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libabsl_utf8_for_code_point.so.20240722": "usr/lib/riscv64-linux-gnu/libabsl_utf8_for_code_point.so.20240722.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libc.so.6": "usr/lib/riscv64-linux-gnu/libc.so.6",
            "sysroot/usr/lib/riscv64-linux-gnu/libdl.so.2": "usr/lib/riscv64-linux-gnu/libdl.so.2",
            "sysroot/usr/lib/riscv64-linux-gnu/libgcc_s.so.1": "usr/lib/riscv64-linux-gnu/libgcc_s.so.1",
            "sysroot/usr/lib/riscv64-linux-gnu/libgfortran.so.5": "usr/lib/riscv64-linux-gnu/libgfortran.so.5.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libm.so.6": "usr/lib/riscv64-linux-gnu/libm.so.6",
            "sysroot/usr/lib/riscv64-linux-gnu/libonnx.so.1": "usr/lib/riscv64-linux-gnu/libonnx.so.1",
            "sysroot/usr/lib/riscv64-linux-gnu/libonnx_proto.so.1": "usr/lib/riscv64-linux-gnu/libonnx_proto.so.1",
            "sysroot/usr/lib/riscv64-linux-gnu/libonnxruntime.so.1.21": "usr/lib/riscv64-linux-gnu/libonnxruntime.so.1.21.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libprotobuf.so.32": "usr/lib/riscv64-linux-gnu/libprotobuf.so.32.0.12",
            "sysroot/usr/lib/riscv64-linux-gnu/libpthread.so.0": "usr/lib/riscv64-linux-gnu/libpthread.so.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libpthreadpool.so.0": "usr/lib/riscv64-linux-gnu/libpthreadpool.so.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libre2.so.11": "usr/lib/riscv64-linux-gnu/libre2.so.11.0.0",
            "sysroot/usr/lib/riscv64-linux-gnu/libstdc++.so.6": "usr/lib/riscv64-linux-gnu/libstdc++.so.6.0.33",
            "sysroot/usr/lib/riscv64-linux-gnu/libz.so.1": "usr/lib/riscv64-linux-gnu/libz.so.1.3.1",
            "sysroot/usr/lib/riscv64-linux-gnu/openblas-serial/libopenblas.so.0": "usr/lib/riscv64-linux-gnu/openblas-serial/libopenblas-r0.3.29.so",
        },
        libraries = {
            "libabsl20240722": ["20240722.0-4", "4bec4936487f8c9cb48f32f0a4f9fccdeefc26dcacd4668abe6a6377ca147eaf"],
            "libblis-serial-dev": ["1.1-2", "c6e877680f3d025e8189c4db3ba1fef660e6056f45687622775bb5941bf00389"],
            "libblis4-serial": ["1.1-2", "b355494f8f49c508abd334807c156e6450a43bd95ecbd6bd1817d0224526d5bf"],
            "libgcc-s1": ["14.2.0-19", "16d3f9f534028615413d23f649e5d246baef48fe7db739ad564ef8b9a6e5587c"],
            "libgfortran5": ["14.2.0-19", "0af32025c3562b0f1de612a657f37331b01ef5dd7c539b479db05d44b69abb0f"],
            "libonnx1t64": ["1.17.0-3+b1", "7c3b53d658cce756c3b0ec00d6aab8f5c7be8c0b9b6e18f17935e6091d101863"],
            "libonnxruntime-dev": ["1.21.0+dfsg-1", "880ec54a7b149ab27b8620db49cab317b14fa2770865afc3de710a95db1cdce7"],
            "libonnxruntime1.21": ["1.21.0+dfsg-1", "394ce4ae6ce15c5c17b68cbde8fee530215ec4a592ef833dcff9e21a23c40307"],
            "libopenblas-serial-dev": ["0.3.29+ds-3", "cac943b4ef6a3d05a21e87c8fe3c4193f112060da7d19499c012c4736c0ee637"],
            "libopenblas0-serial": ["0.3.29+ds-3", "0d72d2982a72b3ccf203bfd48af98301496c5a11320d7557cbc5950cfd2ac328"],
            "libprotobuf32t64": ["3.21.12-11+deb13u1", "57523cc3e849a2d6a0fca89de8265aad7ddc6a6e433dbd5403aa8b7f89cf9bb5"],
            "libpthreadpool-dev": ["0.0~git20240616.560c60d-1", "2e6bfc037669baf3b9931d3812994db6221d03ed9b7ea0a0e46fb0a7941338b1"],
            "libpthreadpool0": ["0.0~git20240616.560c60d-1", "2a0b0570d80bd23dfd513cc9333de1460d6f5a7b13aaf60cc36a3fdb3e08f9f9"],
            "libre2-11": ["20240702-3+b1", "8a62db56b12a9567760114f683d8ffedf2bdd7d402e124b7b19cf54b838dcee6"],
            "libstdc++6": ["14.2.0-19", "f285313f34e0d8f65463c669fac8eb29760a3f3fd6459005dd3110cdd2b10fd7"],
            "libxnnpack-dev": ["0.0~git20241108.4ea82e5-2", "6aae0e343cb384dbaa92326c38df61c1f901fb48f19aaea225d11d6cc9fa4e5c"],
            "libxnnpack0.20241108": ["0.0~git20241108.4ea82e5-2", "6360b6d5fbf49fdce6de809f2eeb4a670435bc6e34d035020db5a1eed81c2c0e"],
            "zlib1g": ["1:1.3.dfsg+really1.3.1-1+deb13u1", "9ef7002c66324b32b66d894dbe2fd045db8fab38da32be5007c4a01ed0a7b495"],
        },
        package = "libc6",
        sha256 = "107a6b5d327f81122549b1c5bfa9cfdea2532c4fddd9e0211a915bdfdf22d7f5",
        suite = "trixie",
        version = "2.41-12+deb13u5",
    )

    # Eigen 3.4 (trixie's libeigen3-dev, headers only, architecture-independent) for //peers'
    # Eigen GEMM harness (issue 50, milestone 3): every header under root/usr/include/eigen3.
    debian_package(
        name = "eigen3",
        arch = "riscv64",
        package = "libeigen3-dev",
        sha256 = "123ff96e6929713b852f58a53727379149fc4a2b682bd04605e784f6620ac08e",
        suite = "trixie",
        tree = True,
        version = "3.4.0-5",
    )

    # The C++ standard library headers that match @riscv64_gcc's glibc 2.36 headers (bookworm's
    # libstdc++-12-dev-riscv64-cross: usr/riscv64-linux-gnu/include/c++/12), for the one C++ file
    # of //peers (the Eigen kernel, compiled by @clang19: the project's riscv64 toolchain is C
    # only). A repository of its own so that @riscv64_gcc, which the tuning records key on, stays
    # as it is. At run time the harness loads trixie's libstdc++.so.6 (14.2) from @peers_riscv64.
    debian_package(
        name = "riscv64_libstdcxx_headers",
        package = "libstdc++-12-dev-riscv64-cross",
        sha256 = "608e3fb1421315cd299fbe84f281e71c087b9a5e86bad2bee7005a98a0fd0956",
        suite = "bookworm",
        tree = True,
        version = "12.2.0-13cross1",
    )

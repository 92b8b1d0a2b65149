"""qemu linux-user binaries built from QEMU's pinned source, with TCG plugin support.

    qemu_user_build(
        name = "qemu-riscv64_build",
        target = "riscv64-linux-user",
        tarball = "@qemu_source//:orig_tarball",
    )
    exec_tool(name = "qemu-riscv64", tool = ":qemu-riscv64_build")

`qemu_user_build` is one action (build_qemu.sh: configure, then ninja for the one
binary), cached like any other: its key is the tarball's digest, the script and
the meson environment's lock. `exec_tool` hands the binary on built for the exec
configuration whoever depends on it: a test's `data` (target configuration) and
a rule's `cfg = "exec"` tool attribute then share one build instead of building
QEMU twice, once per configuration.
"""

def _qemu_user_build_impl(ctx):
    if not ctx.attr.target.endswith("-linux-user"):
        fail("%s: target %r is not a <arch>-linux-user target" % (ctx.label, ctx.attr.target))
    program = "qemu-" + ctx.attr.target[:-len("-linux-user")]
    out = ctx.actions.declare_file(ctx.label.name + "/" + program)
    ctx.actions.run(
        executable = ctx.executable._script,
        arguments = [ctx.file.tarball.path, ctx.executable.python.path, ctx.attr.target, out.path],
        inputs = [ctx.file.tarball],
        tools = [ctx.executable.python],
        outputs = [out],
        # configure and ninja need the machine's compiler, ninja and pkg-config on PATH
        # (--incompatible_strict_action_env: /bin:/usr/bin:/usr/local/bin).
        use_default_shell_env = True,
        mnemonic = "QemuBuild",
        progress_message = "Building %s %s from source with TCG plugins (configure + ninja, minutes)" % (
            program,
            ctx.file.tarball.basename,
        ),
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

qemu_user_build = rule(
    implementation = _qemu_user_build_impl,
    doc = "One qemu linux-user binary built with --enable-plugins from a QEMU source tarball.",
    attrs = {
        "target": attr.string(mandatory = True, doc = "QEMU target, e.g. riscv64-linux-user."),
        "tarball": attr.label(mandatory = True, allow_single_file = True, doc = "QEMU's source tarball."),
        "python": attr.label(
            default = "@qemu_build_env//:python3",
            allow_single_file = True,
            executable = True,
            cfg = "exec",
            doc = "An interpreter with meson and pycotap (QEMU's pythondeps.toml, group meson).",
        ),
        "_script": attr.label(
            default = "//tools/qemu:build_qemu.sh",
            allow_single_file = True,
            executable = True,
            cfg = "exec",
        ),
    },
)

def _exec_tool_impl(ctx):
    # A symlink named after this target (runfiles path <package>/<name>) to the tool built
    # for the exec configuration: only the symlink is made once per configuration.
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = out, target_file = ctx.file.tool, is_executable = True)
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

exec_tool = rule(
    implementation = _exec_tool_impl,
    doc = "<name>: the single file of `tool`, always built for the exec configuration.",
    attrs = {
        "tool": attr.label(mandatory = True, allow_single_file = True, cfg = "exec"),
    },
)

#!/bin/sh
echo "coverage is not available in this offline workspace (remote_coverage_tools is a shim)" >&2
exit 1

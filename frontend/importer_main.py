"""Entry point of the per-model importer binaries that `mlir_import` creates."""

import sys

from frontend.import_model import main

if __name__ == "__main__":
    sys.exit(main())

// A shared library without the IREE query symbol.
int plain_library_function(void) { return 42; }

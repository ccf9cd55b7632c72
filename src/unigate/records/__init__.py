"""Task records of the asynchronous path families other than music, one module per family."""

# HW2's package __init__ imports the whole homework (CUDA kernels included); the explorer never runs it.
raise ImportError("the explorer must not run minitorch/__init__.py")

"""This machine: its hardware, the memory a run needs, its processes for data-parallel runs."""

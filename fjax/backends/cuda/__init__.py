"""The CUDA backend: the kernel IR rendered to CUDA C and run through cupy.

- ``runtime``: device buffers, NVRTC modules, kernel launches and cuBLAS GEMMs (cupy, imported
  only when a GPU is asked for; nothing here is imported by ``import fjax``).
"""

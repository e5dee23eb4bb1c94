"""GPU and network tables: plain data, each number with its source; no time model.

``spec`` (the :class:`GPUSpec` type and its parts), ``sources`` (the documents the figures come from), ``hopper`` and
``others`` (the rows), ``table`` (every GPU by name), ``gpu`` (lookup: :func:`get_gpu`, :func:`list_gpus`,
:func:`gpu_from_proton`), ``proton`` (a spec from Proton's device info) and ``network`` (inter-node networks).
"""

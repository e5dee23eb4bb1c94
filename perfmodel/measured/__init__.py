"""What really ran: Proton profiles read as :class:`perfmodel.PerfData`, roofline charts, the MoE-bench workflow.

``proton`` (:func:`read`), ``hatchet`` (the file format), ``plot`` (:func:`roofline`) and ``moe_bench`` (Triton's
``triton_kernels`` MoE bench folders).
"""

"""Merging fitted posteriors (:func:`~skbong.merge_posteriors`, and
:mod:`skbong.distributed` on top): the checks that two fits may merge (``checks``), the
natural-parameter algebra (``algebra``) and the merge itself (``merge``)."""

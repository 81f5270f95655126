"""Point-in-time feature panels for models (CONTRACT §11).

>>> import mdframes as md
>>> md.features.catalog()["name"].head(3).tolist()
['insider_net_value_90d', 'insider_buy_count_90d', 'congress_net_buy_90d']

- :func:`catalog`: the named features, as data (:data:`CATALOG`).
- :func:`panel`: one row per (date, symbol), one column per feature, computed from each
  dataset by its publication anchor, so that no row sees what was not yet public.
- :func:`write_panel`: the same panel written as Parquet, one file per chunk of symbols,
  atomically (a ``_SUCCESS`` marker last); :func:`read_panel` reads it back.
- :class:`Feature`: a custom feature next to the catalog's.
- :func:`training_set`: a panel with a label per row (:func:`forward_return`) and purged,
  embargoed cross-validation splits (:class:`TrainingSet`, :func:`read_training_set`).
- :func:`audit` (:class:`AuditReport`): a set checked for look-ahead, label copies, fold
  overlap, coverage and knowledge; :func:`rebuild` and :meth:`TrainingSet.verify`: the set
  made again from the lake at the table versions it recorded; :func:`revision_impact`:
  what the vendor's revisions and backfills changed in a panel.
- :func:`evaluate` (:class:`Evaluation`): is a feature worth a model? Rank IC, quantile
  returns, decay over label horizons, and the IC revised data would have claimed.
- :class:`PurgedWalkForward`, :class:`PurgedKFold`, :class:`CombinatorialPurgedCV`: those
  splits as scikit-learn cross-validators (``ts.cv(...)``).
"""

from __future__ import annotations

from .panels.build import panel, write_panel
from .panels.definitions import CATALOG, catalog
from .panels.panelfile import read_panel
from .panels.spec import Feature
from .proof.audit import AuditReport, audit
from .proof.evaluate import Evaluation, evaluate
from .proof.revisions import revision_impact
from .training.labels import forward_return
from .training.splits import CombinatorialPurgedCV, PurgedKFold, PurgedWalkForward
from .training.trainset import TrainingSet, read_training_set, rebuild, training_set

__all__ = [
    "catalog",
    "panel",
    "write_panel",
    "read_panel",
    "Feature",
    "CATALOG",
    "forward_return",
    "training_set",
    "TrainingSet",
    "read_training_set",
    "PurgedWalkForward",
    "PurgedKFold",
    "CombinatorialPurgedCV",
    "audit",
    "AuditReport",
    "rebuild",
    "revision_impact",
    "evaluate",
    "Evaluation",
]

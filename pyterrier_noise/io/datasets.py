"""Qrels from ir_datasets: an id (``"irds:NAME"`` or a registered ``"NAME"``), a dataset object or a
PyTerrier dataset backed by one; when the files are not available offline the error says which
file is needed and where to put it (ir_datasets' home, ``IR_DATASETS_HOME``)."""
from __future__ import annotations

import importlib.util
import os
from typing import Any

import pandas as pd

from .._validation import InputError
from .frames import clean_qrels, namedtuples_to_frame

__all__: list[str] = []


def irds_dataset_id(text: Any) -> str | None:
    """The ir_datasets id named by ``text``: ``"irds:NAME"``, or ``"NAME"`` when it is registered
    (asked only for a path that does not exist), else None."""
    text = os.fspath(text)
    if text.startswith("irds:"):
        return text[len("irds:"):]
    if not text or importlib.util.find_spec("ir_datasets") is None:
        return None
    import ir_datasets
    try:
        ir_datasets.registry[text]
    except KeyError:
        return None
    return text


def _needed_files(dataset: Any) -> list[str]:
    """The local files an ir_datasets dataset reads its qrels from (best effort: the ``_path`` of
    each download wrapper along the qrels handler's chain), with their URL when one is known."""
    try:
        dlc = dataset.qrels_handler()._qrels_dlc
    except Exception:   # noqa: BLE001 -- a handler without a download chain: nothing to name
        return []
    out, seen = [], set()
    while dlc is not None and id(dlc) not in seen:
        seen.add(id(dlc))
        path = getattr(dlc, "_path", None)
        url = getattr(getattr(dlc, "_streamer", None), "url", None) or getattr(dlc, "url", None)
        if path is not None:
            out.append(f"{path}" + (f" (downloaded from {url})" if url else ""))
        dlc = getattr(dlc, "_streamer", None) or getattr(dlc, "_dlc", None)
    return out


def _home() -> str:
    try:
        import ir_datasets
        return str(ir_datasets.util.home_path())
    except Exception:   # noqa: BLE001 -- a path for a message only
        return os.environ.get("IR_DATASETS_HOME") or "~/.ir_datasets"


def _name_of(dataset: Any) -> str:
    for attr in ("dataset_id", "_dataset_id"):
        value = getattr(dataset, attr, None)
        try:
            value = value() if callable(value) else value
        except Exception:   # noqa: BLE001 -- a name for a message only
            value = None
        if value:
            return str(value)
    return type(dataset).__name__


def read_irds(dataset: Any, fractional: str) -> pd.DataFrame:
    """Qrels of an ir_datasets dataset (or id) as a validated ``qid, docno, label`` frame."""
    if isinstance(dataset, str):
        if importlib.util.find_spec("ir_datasets") is None:
            raise InputError(f"irds:{dataset}: reading an ir_datasets id needs ir_datasets (pip install ir_datasets)")
        import ir_datasets
        name = dataset
        try:
            dataset = ir_datasets.load(name)
        except KeyError:
            raise InputError(f"irds:{name}: not a registered ir_datasets id and no such file "
                             f"(see https://ir-datasets.com for the ids)") from None
    else:
        name = _name_of(dataset)
    if hasattr(dataset, "has_qrels") and not dataset.has_qrels():
        raise InputError(f"ir_datasets {name}: this dataset provides no qrels")
    try:
        frame = namedtuples_to_frame(dataset.qrels_iter(), "qrels")
    except InputError:
        raise
    except Exception as exc:   # noqa: BLE001 -- a download or file error: say what is needed and where
        home = _home()
        files = _needed_files(dataset)
        need = ("it needs " + "; ".join(files)) if files else "its qrels file is missing"
        raise InputError(
            f"ir_datasets {name}: the qrels are not available offline ({type(exc).__name__}: {exc}); "
            f"{need}. Put the file there (ir_datasets' home is {home}; set IR_DATASETS_HOME to use "
            f"another directory), or run once with network access to download it") from None
    return clean_qrels(frame, f"ir_datasets {name} qrels", fractional)

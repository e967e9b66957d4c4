"""The figures of a `plumb trace replay --json` result document, for the
bench scripts: the replay writes a plumb.result.v1 document (one scenario:
metrics, the operations table, the summary as notes)."""
import json


def replayed(path):
    """seconds, total_ops, divergences, expected_errors, noted, reference,
    time_ratio, and ops: [{op, count, bytes, mean_us}], from the document."""
    with open(path) as f:
        doc = json.load(f)
    if doc.get("schema") != "plumb.result.v1":
        raise SystemExit(f"{path}: not a plumb result document")
    s = doc["scenarios"][0]
    metrics = {m["name"]: m["value"] for m in s["metrics"]}
    reference = next((n[len("time_vs_"):] for n in metrics if n.startswith("time_vs_")), None)
    table = next(t for t in s["tables"] if t["title"] == "replayed operations")
    ops = [{"op": r[0], "count": int(r[1]), "bytes": int(r[2]), "mean_us": float(r[5])} for r in table["rows"]]
    return {
        "seconds": metrics["seconds"],
        "total_ops": int(metrics["ops"]),
        "divergences": int(metrics["divergences"]),
        "expected_errors": int(metrics["expected_errors"]),
        "noted": int(metrics["noted"]),
        "reference": reference,
        "time_ratio": metrics.get(f"time_vs_{reference}"),
        "ops": ops,
    }

"""Shared by test_cli_transformer and test_cli_fmnist: a bundled Transformer's ternion run
against the PyTorch reference recorded beside it, and the event engine against the dense one."""
import sys


def compare_to_torch(kind, ev, predictions, counts, failures):
    """Appends to `failures` where the run `ev` (`ternion run --json`) differs from PyTorch:
    its predictions against `predictions` (as many), the per-layer spikes and the attention
    counts against `counts` ("spikes", "aux"). Returns how many predictions differ."""
    pred = ev["predictions"]
    bad = [i for i, (a, b) in enumerate(zip(pred, predictions)) if a != b]
    if len(pred) != len(predictions) or bad:
        failures.append(f"{kind}: predictions differ at {bad[:10]}")
    layers = {L["name"]: L for L in ev["layers"]}
    for name, c in counts["spikes"].items():
        if layers[name]["spikes"] != c:
            failures.append(f"{kind}: {name} spikes {layers[name]['spikes']} != torch {c}")
    for key, c in counts["aux"].items():
        node, field = key.split("/")
        if layers[node]["attention"][field] != c:
            failures.append(f"{kind}: {key} {layers[node]['attention'][field]} != torch {c}")
    return len(bad)


def compare_accuracy(kind, ev, ref, failures):
    if abs(ev["accuracy"] - ref["torch_test_accuracy"]) > 1e-12:
        failures.append(f"{kind}: accuracy {ev['accuracy']} != torch {ref['torch_test_accuracy']}")


def compare_engines(kind, a, d, failures, attention_ops=False):
    """Appends to `failures` where the event run `a` and the dense run `d` differ: per-layer
    spikes, predictions and (with attention_ops) the ops of ternion's attention nodes."""
    for la, ld in zip(a["layers"], d["layers"]):
        if la["spikes"] != ld["spikes"]:
            failures.append(f"{kind}: {la['name']} event {la['spikes']} dense {ld['spikes']}")
        if attention_ops and la["type"].startswith("ternion.") and \
                la["category"] == "attention" and la["ops"] != ld["ops"]:
            failures.append(f"{kind}: {la['name']} ops differ between engines")
    if a["predictions"] != d["predictions"]:
        failures.append(f"{kind}: event and dense predictions differ")


def finish(failures):
    """Prints the failures and exits: 1 when there are any, else 0."""
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)

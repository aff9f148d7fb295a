#!/usr/bin/env bash
# list_forms.sh CPBENCH — `cpbench list --format json` and `--format flat` (harness/list_json.h):
# the JSON parses and has every field of its schema with its type; the flat form is exactly
# the JSON's leaves (so a script reading either reads the same); the text form is unchanged
# by the option's default.
set -u
CPB=$1
PY=${PYTHON:-python3}
W=$(mktemp -d) && trap 'rm -rf "$W"' EXIT
"$CPB" list --format json > "$W/list.json" || { echo "list_forms: cpbench list --format json failed" >&2; exit 1; }
"$CPB" list --format flat > "$W/list.flat" || { echo "list_forms: cpbench list --format flat failed" >&2; exit 1; }
"$CPB" list > "$W/text.txt" && "$CPB" list --format text > "$W/text2.txt" && cmp -s "$W/text.txt" "$W/text2.txt" ||
  { echo "list_forms: \`cpbench list\` and \`cpbench list --format text\` differ" >&2; exit 1; }
"$PY" - "$W/list.json" "$W/list.flat" <<'PY'
import json, sys
tree = json.load(open(sys.argv[1]))
bad = []
def need(cond, what):
    if not cond:
        bad.append(what)
str_or_none = (str, type(None))
need(tree.get("schema") == 1, "schema is not 1")
methods = tree.get("methods", [])
need(isinstance(methods, list) and methods, "methods: not a non-empty list")
names = [m.get("name") for m in methods]
need(len(set(names)) == len(names), f"methods named twice: {names}")
def option_ok(o, where):
    need(isinstance(o.get("option"), str) and o["option"].startswith("--"), f"{where}: option {o.get('option')!r}")
    need(o.get("type") in ("int", "tokens", "choice", "bytes"), f"{where}: type {o.get('type')!r}")
    need(isinstance(o.get("default"), str_or_none), f"{where}: default")
    need((o["type"] == "choice") == isinstance(o.get("choices"), list), f"{where}: choices must be a list exactly for a choice")
    if o["type"] == "choice":
        need(o["default"] in o["choices"], f"{where}: default {o['default']!r} not among {o['choices']}")
for m in methods:
    need(isinstance(m.get("name"), str) and isinstance(m.get("summary"), str), f"method {m.get('name')!r}: name, summary")
    for o in m.get("options", None) or []:
        option_ok(o, f"method {m['name']} {o.get('option')}")
    need(isinstance(m.get("options"), list), f"method {m.get('name')!r}: options is not a list")
points = tree.get("point_options", [])
need(any(o.get("option") == "--attn" for o in points), "point_options lacks --attn")
for o in points:
    option_ok(o, f"point option {o.get('option')}")
    need(o.get("points") in ("every point", "sim", "sim model scope"), f"point option {o.get('option')}: points")
models = {m["name"]: m for m in tree.get("models", [])}
need(models.get("llama3-8b", {}).get("hidden") == 4096 and models["llama3-8b"].get("kv_heads") == 8,
     "models: llama3-8b is not D 4096, G 8")
backends = tree.get("backends", {})
need(list(backends)[:2] == ["cpu", "sim"], f"backends: {list(backends)}")
for name, b in backends.items():
    need(isinstance(b.get("present"), bool) and isinstance(b.get("description"), str), f"backend {name}: present, description")
    need(b.get("devices") is None or (isinstance(b["devices"], int) and b["devices"] >= 0), f"backend {name}: devices")
    need((b.get("devices") == 0) == isinstance(b.get("devices_why"), str), f"backend {name}: devices_why exactly when no device")
need(backends.get("cpu", {}).get("present") is True, "the cpu backend is not present")
dnn = tree.get("attention", {}).get("cudnn", {})
need(isinstance(dnn.get("compiled_in"), bool) and isinstance(dnn.get("usable"), bool) and isinstance(dnn.get("why"), str),
     "attention.cudnn: compiled_in, usable (booleans), why (a string)")
need(not dnn.get("usable") or dnn.get("compiled_in"), "attention.cudnn: usable but not compiled in")
need(tree.get("attention", {}).get("implementations") == ["cudnn", "own"], "attention.implementations")
profiles = tree.get("gpu_profiles", [])
need("h200" in [p.get("name") for p in profiles], "gpu_profiles lacks h200")
need(sum(p.get("default") is True for p in profiles) == 1, "gpu_profiles: not exactly one default")
need(all(isinstance(p.get("memory_bytes"), int) and p["memory_bytes"] > 0 for p in profiles), "gpu_profiles: memory_bytes")
frameworks = tree.get("frameworks", [])
need({"torchtitan", "deepspeed"} <= {f.get("name") for f in frameworks}, "frameworks: torchtitan, deepspeed")
need(sum(f.get("default") is True for f in frameworks) == 1, "frameworks: not exactly one default")

# the flat form: every leaf of the JSON, in order, as PATH<TAB>VALUE
def esc(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
def leaves(v, path):
    if isinstance(v, dict) and v:
        for k, c in v.items():
            yield from leaves(c, f"{path}.{k}" if path else k)
    elif isinstance(v, list) and v:
        for i, c in enumerate(v):
            yield from leaves(c, f"{path}.{i}" if path else str(i))
    elif isinstance(v, bool):
        yield f"{path}\t{'true' if v else 'false'}"
    elif v is None:
        yield f"{path}\tnull"
    elif isinstance(v, str):
        yield f"{path}\t{esc(v)}"
    elif isinstance(v, float):
        yield f"{path}\t{v!r}"
    elif isinstance(v, list):
        yield f"{path}\t[]"
    elif isinstance(v, dict):
        yield f"{path}\t{{}}"
    else:
        yield f"{path}\t{v}"
want = list(leaves(tree, ""))
got = open(sys.argv[2], encoding="utf-8").read().split("\n")
need(got[-1] == "", "the flat form does not end with a newline")
got = got[:-1]
# reals: the flat form prints %.17g, Python the shortest repr; compare them as numbers
def same(a, b):
    if a == b:
        return True
    pa, _, va = a.partition("\t")
    pb, _, vb = b.partition("\t")
    try:
        return pa == pb and float(va) == float(vb)
    except ValueError:
        return False
need(len(got) == len(want), f"the flat form has {len(got)} lines, the JSON {len(want)} leaves")
for a, b in zip(got, want):
    if not same(a, b):
        bad.append(f"flat line {a!r} where the JSON has {b!r}")
        break
if bad:
    print("list_forms: " + "\n  ".join(bad), file=sys.stderr)
    sys.exit(1)
print(f"list_forms: {len(methods)} methods, {len(want)} leaves, the flat form equal to the JSON's")
PY

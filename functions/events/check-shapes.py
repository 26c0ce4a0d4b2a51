#!/usr/bin/env python3
"""Checks that every event in events has the shape SAM CLI generates for its source.

    .venv-sam/bin/python functions/events/check-shapes.py      # or any python3, with `sam` on PATH

Templates come from `sam local generate-event apigateway http-api-proxy`,
`sam local generate-event dynamodb update` and `sam local generate-event sqs receive-message`
(offline; SAM is pinned in infra/scripts/requirements-sam.txt,
`infra/scripts/lint-template.sh` installs it into .venv-sam). An event passes when every field it has
exists in the template at the same place with the same JSON type, and every field it lacks is
one API Gateway / Lambda leave out for such a request. Free-form maps (headers, claims, ...) are
checked for string values only. Exit status 1 on any mismatch.
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Maps whose keys are the request's own: only their values' type is checked.
FREE_FORM = {
    "messageAttributes",
    "headers", "queryStringParameters", "pathParameters", "stageVariables",
    "requestContext.authorizer.jwt.claims",
}
# Fields API Gateway omits when the request has none of them (no cookie, no body, no query,
# no stage variables, no mutual TLS).
API_OPTIONAL = {
    "cookies", "body", "queryStringParameters", "stageVariables", "pathParameters",
    "requestContext.authentication", "requestContext.authorizer",
}
# Items in DynamoDB JSON, keyed by the table's own attribute names: each value must be one typed
# attribute value, as in sam's `{"N": "101"}`.
ITEMS = {"dynamodb.Keys"}
# An HTTP API JWT authorizer sends `scopes: null` when the route requires none.
NULLABLE = {"requestContext.authorizer.jwt.scopes"}
# KEYS_ONLY stream records carry no item images.
STREAM_OPTIONAL = {"dynamodb.NewImage", "dynamodb.OldImage"}


def sam():
    local = os.path.join(ROOT, ".venv-sam", "bin", "sam")
    exe = local if os.access(local, os.X_OK) else shutil.which("sam")
    if not exe:
        sys.exit("sam not found: run infra/scripts/lint-template.sh once (it creates .venv-sam)")
    return exe


def generate(*args):
    env = dict(os.environ, SAM_CLI_TELEMETRY="0")
    out = subprocess.run([sam(), "local", "generate-event", *args], check=True,
                         capture_output=True, text=True, env=env).stdout
    return json.loads(out)


def kind(v):
    return {dict: "object", list: "array", str: "string", bool: "boolean",
            type(None): "null"}.get(type(v), "number")


def compare(ours, theirs, optional, at, problems):
    if at in FREE_FORM:
        if kind(ours) != "object":
            problems.append(f"{at}: {kind(ours)}, expected an object")
            return
        for k, v in ours.items():
            if not isinstance(v, str):
                problems.append(f"{at}.{k}: {kind(v)}, expected a string")
        return
    if at in ITEMS:
        if kind(ours) != "object" or not ours:
            problems.append(f"{at}: expected a non-empty object")
            return
        for k, v in ours.items():
            ok = isinstance(v, dict) and len(v) == 1 and next(iter(v)) in ("S", "N", "B")
            if not ok or not isinstance(next(iter(v.values())), str):
                problems.append(f"{at}.{k}: {json.dumps(v)} is not one scalar attribute value")
        return
    if at in NULLABLE and ours is None:
        return
    if kind(ours) != kind(theirs):
        problems.append(f"{at or '<root>'}: {kind(ours)}, sam has {kind(theirs)}")
        return
    if isinstance(ours, dict):
        for k in ours:
            path = f"{at}.{k}" if at else k
            if k not in theirs:
                problems.append(f"{path}: not in sam's event")
            else:
                compare(ours[k], theirs[k], optional, path, problems)
        for k in theirs:
            path = f"{at}.{k}" if at else k
            if k not in ours and path not in optional:
                problems.append(f"{path}: missing")


def check_records(event, templates, problems):
    """A batch of records (a DynamoDB stream's or an SQS queue's), by each record's source."""
    if set(event) != {"Records"}:
        problems.append(f"top level {sorted(event)}, sam has ['Records']")
    for i, r in enumerate(event.get("Records", [])):
        source = r.get("eventSource")
        if source not in templates:
            problems.append(f"Records[{i}].eventSource: {source!r}, expected one of {sorted(templates)}")
            continue
        record = templates[source]["Records"][0]
        sub = []
        if r.get("dynamodb", {}).get("StreamViewType") == "KEYS_ONLY":
            sub += [f"dynamodb.{k}: a KEYS_ONLY record has no images"
                    for k in ("NewImage", "OldImage") if k in r["dynamodb"]]
        compare(r, record, STREAM_OPTIONAL, "", sub)
        problems.extend(f"Records[{i}].{p}" for p in sub)


def main():
    api = generate("apigateway", "http-api-proxy")
    records = {
        "aws:dynamodb": generate("dynamodb", "update"),
        "aws:sqs": generate("sqs", "receive-message"),
    }
    version = subprocess.run([sam(), "--version"], capture_output=True, text=True).stdout.strip()
    failed, checked = 0, 0
    for name in sorted(os.listdir(HERE)):
        if not name.endswith(".json") or name == "expected.json":
            continue
        event = json.load(open(os.path.join(HERE, name)))
        problems = []
        if "Records" in event:
            check_records(event, records, problems)
        else:
            compare(event, api, API_OPTIONAL, "", problems)
        checked += 1
        if problems:
            failed += 1
            print(f"{name}:")
            for p in problems:
                print(f"  {p}")
    print(f"{checked - failed} of {checked} events have the shapes of `sam local generate-event` ({version})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Least privilege in a translated template (JSON), for `make lint-template`: no role may hold
a managed policy beyond basic logging and X-Ray's write-only policy (which SAM attaches whenever
`Tracing` comes from a parameter, whatever its value), and for the API's role alone the
network interfaces a function in a VPC needs (SAM attaches AWSLambdaVPCAccessExecutionRole
whenever `VpcConfig` is written, even as an `!If` that chooses none: the shared count tier's);
no inline or managed policy statement may
name a wildcard action, every resource, or a wildcard ARN (a stream's label aside). Exits 1
naming the first offence.

    infra/scripts/check-policies.py translated.json
"""
import json, sys
t = json.load(open(sys.argv[1]))
allowed = ("/AWSLambdaBasicExecutionRole", "/AWSXrayWriteOnlyAccess")
allowed_for = {"LikesApiFunctionRole": ("/AWSLambdaVPCAccessExecutionRole",)}
def statements(r):
    if r["Type"] == "AWS::IAM::Role":
        for p in r["Properties"].get("Policies", []):
            yield from p["PolicyDocument"]["Statement"]
    if r["Type"] == "AWS::IAM::ManagedPolicy":
        yield from r["Properties"]["PolicyDocument"]["Statement"]

for name, r in t["Resources"].items():
    if r["Type"] == "AWS::IAM::Role":
        mine = allowed + allowed_for.get(name, ())
        extra = [a for a in r["Properties"].get("ManagedPolicyArns", []) if not a.endswith(mine)]
        if extra:
            sys.exit(f"{name} has broad managed policies: {extra}")
    for st in statements(r):
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        if any(a.endswith(":*") or a == "*" for a in actions):
            sys.exit(f"{name} grants a wildcard action: {actions}")
        resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
        if "*" in resources:
            sys.exit(f"{name} grants {actions} on every resource (\"*\")")
        # A wildcard inside an ARN: only a stream's label (new with each stream) may be one.
        for res in resources:
            text = json.dumps(res)
            if "*" in text and "/stream/*" not in text:
                sys.exit(f"{name} grants {actions} on a wildcard resource: {text}")

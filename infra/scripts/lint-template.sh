#!/usr/bin/env bash
# Validates template.yaml offline: `sam validate --lint`, then cfn-lint on the SAM-translated
# template (cfn-lint >= 1.54 no longer expands SAM resources itself). Installs its own pinned
# tools (infra/scripts/requirements-sam.txt) into .venv-sam on first run.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$("$root/infra/scripts/pinned-venv.sh" .venv-sam infra/scripts/requirements-sam.txt sam "pip installs SAM CLI and cfn-lint")"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" SAM_CLI_TELEMETRY=0
cd "$root"
"$venv/bin/sam" validate --lint
# The sample events have the shapes `sam local generate-event` gives (what sam local invoke sends).
"$venv/bin/python" "$root/functions/events/check-shapes.py"
# Translated and linted twice: with the defaults, and with CORS on (AllowedOrigins adds a CORS
# configuration and an OPTIONS route, both under the CorsOn condition).
plain="$(mktemp -t translated.XXXXXX.json)"
cors="$(mktemp -t translated-cors.XXXXXX.json)"
translate() {
  "$venv/bin/python" - "$1" "$2" <<'PY'
import json, sys
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

template = yaml_parse(open("template.yaml").read())
# `sam build` rewrites CodeUri to an S3 location; the translator insists on one.
# and a nested application's local template (infra/monitoring.yaml, linted on its own) to an S3 URL.
for resource in template["Resources"].values():
    if resource["Type"] == "AWS::Serverless::Function":
        resource["Properties"]["CodeUri"] = "s3://bucket/code.zip"
    if resource["Type"] == "AWS::Serverless::Application":
        location = resource["Properties"]["Location"]
        resource["Properties"]["Location"] = f"https://bucket.s3.amazonaws.com/{location}"

class ManagedPolicies:
    def load(self):
        return {"AWSLambdaBasicExecutionRole":
                "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"}

# Parameter values as `sam deploy --parameter-overrides` passes them: SAM substitutes some
# parameters' values while translating (CorsConfiguration's among them).
parameters = json.loads(sys.argv[2])
json.dump(transform(template, parameters, ManagedPolicies()), open(sys.argv[1], "w"), indent=1)
PY
}
# The nested stacks (monitoring, provisioned capacity) are plain CloudFormation: linted as they are.
# So is the two regions' global tables stack (docs/regions.md#the-template).
"$venv/bin/cfn-lint" infra/monitoring.yaml infra/capacity.yaml infra/global-tables.yaml
translate "$plain" '{}'
translate "$cors" '{"AllowedOrigins": "https://example.com,http://127.0.0.1:3001"}'
# Every front door with every capacity mode (the lean profile is FunctionUrl + Provisioned).
api_prov="$(mktemp -t translated-api-prov.XXXXXX.json)"
url_ondemand="$(mktemp -t translated-url.XXXXXX.json)"
lean="$(mktemp -t translated-lean.XXXXXX.json)"
global="$(mktemp -t translated-global.XXXXXX.json)"
trap 'rm -f "$plain" "$cors" "$api_prov" "$url_ondemand" "$lean" "$global"' EXIT
translate "$api_prov" '{"CapacityMode": "Provisioned"}'
translate "$url_ondemand" '{"FrontDoor": "FunctionUrl"}'
# The lean profile with the shared count tier, its function in the tier's subnets.
translate "$lean" '{"FrontDoor": "FunctionUrl", "CapacityMode": "Provisioned", "AllowedOrigins": "https://example.com", "SharedCountCacheSubnetIds": "subnet-0a1b2c3d,subnet-4e5f6a7b", "SharedCountCacheSecurityGroupIds": "sg-0a1b2c3d"}'
# One of two regions, the lean profile, on the global tables' replicas.
translate "$global" '{"RegionRole": "global", "ReplicaLikesTable": "likes-global", "ReplicaMarkersTable": "likes-markers-global", "ReplicaLikesStreamArn": "arn:aws:dynamodb:eu-west-1:123456789012:table/likes-global/stream/2026-12-07T00:00:00.000", "EventsRegion": "us-east-1", "HomeClaim": "custom:home", "FrontDoor": "FunctionUrl", "CapacityMode": "Provisioned"}'
for out in "$plain" "$cors" "$api_prov" "$url_ondemand" "$lean" "$global"; do
  "$venv/bin/cfn-lint" "$out"
  # Least privilege: no role may hold a managed policy beyond basic logging and X-Ray's write-only
  # policy (which SAM attaches whenever `Tracing` comes from a parameter, whatever its value),
  # and the API's network interfaces in a VPC (the shared count tier's);
  # no inline or managed policy statement may name a wildcard action, every resource, or a
  # wildcard ARN (a stream's label aside).
  "$venv/bin/python" "$root/infra/scripts/check-policies.py" "$out"
done
# What API Gateway imports: the CORS configuration and the OPTIONS route both under CorsOn, the
# route with an integration and no authorizer, and the origins SAM substituted the caller's.
"$venv/bin/python" - "$plain" "$cors" <<'PY'
import json, sys
plain, cors = (json.load(open(p)) for p in sys.argv[1:])
for name, t, origins in (("defaults", plain, ""),
                         ("AllowedOrigins set", cors, "https://example.com,http://127.0.0.1:3001")):
    body = t["Resources"]["LikesHttpApi"]["Properties"]["Body"]
    cond, on, off = body["x-amazon-apigateway-cors"]["Fn::If"]
    if (cond, off) != ("CorsOn", {"Ref": "AWS::NoValue"}) or on["allowOrigins"] != {"Fn::Split": [",", origins]}:
        sys.exit(f"{name}: unexpected CORS configuration {body['x-amazon-apigateway-cors']}")
    cond, on, off = body["paths"]["/{proxy+}"]["options"]["Fn::If"]
    if (cond, off) != ("CorsOn", {"Ref": "AWS::NoValue"}) or "security" in on \
            or on["x-amazon-apigateway-integration"]["type"] != "aws_proxy":
        sys.exit(f"{name}: the OPTIONS route must be conditional, integrated and unauthorized")
    # Every other method goes to the function through the JWT authorizer.
    any_method = body["paths"]["/{proxy+}"]["x-amazon-apigateway-any-method"]
    if any_method.get("security") != [{"LikesJwt": []}] \
            or any_method["x-amazon-apigateway-integration"]["type"] != "aws_proxy":
        sys.exit(f"{name}: ANY /{{proxy+}} must be integrated and behind the JWT authorizer: {any_method}")
print("template OK: valid SAM, cfn-lint clean for each front door, capacity mode, CORS setting and region role, least-privilege roles")
PY

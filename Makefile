.PHONY: chaos mutants test unit api-fuzz dev token oidc lint lint-template fmt build bench smoke

# Every test: unit, integration (against moto, which this starts and stops), end-to-end, and
# the spec-driven HTTP fuzz, suite by suite, with the time each took (tests/scripts/suites.py).
# `make test SUITES="e2e::chaos api"` runs only those suites; `tests/scripts/suites.py --list`
# names them all.
test:
	infra/scripts/with-moto.sh tests/scripts/suites.py $(SUITES)

# The pure tests only (no emulator, no network): unit tests of every crate, the handler's
# no-panic property, the events' delivery model, the paging and aggregator model properties.
# Seconds once built, for the edit loop.
# Every command names the whole workspace: cargo unifies features over the packages selected,
# and a `-p` run would build the dependencies again with other features.
unit:
	cargo test --workspace --lib
	cargo test --workspace --test api -- no_panic::
	cargo test --workspace --test events -- delivery_model:: batches::
	cargo test --workspace --test integration -- aggregator_model:: ids_model:: recount_model:: repair_model:: --skip on_dynamodb

# schemathesis against the local stack, from functions/likes-api/openapi.yaml (also part of
# `make test`).
api-fuzz:
	tests/scripts/api-fuzz.sh

# The whole system locally: API on 127.0.0.1:$${LIKES_PORT:-3000}, stream poller, emulator.
dev:
	@infra/scripts/venv.sh >/dev/null
	cargo run -p likes-local --bin likes-local

# A dev token for USER (any user id): TOKEN=$$(make -s token USER=<id>)
token:
	@if [ "$(origin USER)" != "command line" ]; then \
	  echo "make token: name the user: make token USER=<user id> (USER from the environment is your login name, not a user id)" >&2; \
	  exit 2; \
	fi
	@cargo run --quiet -p likes-local --bin likes-local -- token "$(USER)"

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

# A real OpenID provider on 127.0.0.1 (node-oidc-provider, the tests' own, tests/oidc), for
# `LIKES_AUTH=jwt make dev`; docs/local.md shows how to get its tokens. OIDC_PORT (3100).
oidc:
	tests/scripts/oidc-install.sh
	node tests/oidc/provider.mjs $(or $(OIDC_PORT),3100)

# template.yaml: valid SAM, cfn-lint clean on the translated template, least-privilege roles.
lint-template:
	infra/scripts/lint-template.sh

fmt:
	cargo fmt --all

build:
	cargo build --workspace --release

# Every benchmark figure the README quotes, with the machine it ran on (release build; the
# Python peer's venv is made on first run). `make bench EVENT=path.json` decodes + groups a
# captured Lambda stream event and prints records/s. Figures only: nothing is asserted.
bench:
	EVENT="$(EVENT)" tests/scripts/bench.sh

# A short end-to-end check of a deployed stack (like, read back, count converging, listings,
# summary, unlike, count back), right after `sam deploy`; exits non-zero naming the failed step.
#   make smoke API=<the stack's ApiUrl output> TOKEN=<a JWT from its identity provider>
smoke:
	@API="$(API)" TOKEN="$(TOKEN)" tests/scripts/smoke.sh

# The end-to-end chaos run at its large size (make test runs it at 2,400 requests): users like
# and unlike through HTTP while the stream path is faulted, the emulator stopped once and the
# stack restarted once; prints requests, faults by kind and mismatches (which must be 0).
chaos:
	@infra/scripts/venv.sh >/dev/null
	LIKES_CHAOS_REQUESTS=$${LIKES_CHAOS_REQUESTS:-20000} cargo test --workspace --test e2e -- chaos:: --nocapture

# Deliberate defects against each guarantee (tests/mutants/mutants.toml), each run against the
# test named for it in a scratch copy; prints caught/missed per guarantee. Not in `make test`:
# it builds its own target dir and takes tens of minutes. `make mutants ONLY="name ..."`.
mutants:
	infra/scripts/with-moto.sh tests/scripts/mutants.py $(ONLY)

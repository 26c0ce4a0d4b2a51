.PHONY: chaos mutants test unit api-fuzz dev token lint lint-template fmt build bench smoke

# Every test: unit, integration (against moto, which this starts and stops), end-to-end, and
# the spec-driven HTTP fuzz.
test:
	scripts/with-moto.sh cargo test --workspace --all-targets
	scripts/api-fuzz.sh

# The pure tests only (no emulator, no network): unit tests of every crate, the handler's
# no-panic property, the paging and aggregator model properties. Seconds, for the edit loop.
unit:
	cargo test --workspace --lib --bins
	cargo test -p likes-api --test no_panic
	cargo test -p like-events --test delivery_model --test batches
	cargo test -p likes-harness --test aggregator_model --test ids_model --test recount_model --test repair_model -- --skip on_dynamodb

# schemathesis against the local stack, from openapi.yaml (also part of `make test`).
api-fuzz:
	scripts/api-fuzz.sh

# The whole system locally: API on 127.0.0.1:$${LIKES_PORT:-3000}, stream poller, emulator.
dev:
	@scripts/venv.sh >/dev/null
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

# template.yaml: valid SAM, cfn-lint clean on the translated template, least-privilege roles.
lint-template:
	scripts/lint-template.sh

fmt:
	cargo fmt --all

build:
	cargo build --workspace --release

# Every benchmark figure the README quotes, with the machine it ran on (release build; the
# Python peer's venv is made on first run). `make bench EVENT=path.json` decodes + groups a
# captured Lambda stream event and prints records/s. Figures only: nothing is asserted.
bench:
	EVENT="$(EVENT)" scripts/bench.sh

# A short end-to-end check of a deployed stack (like, read back, count converging, listings,
# summary, unlike, count back), right after `sam deploy`; exits non-zero naming the failed step.
#   make smoke API=<the stack's ApiUrl output> TOKEN=<a JWT from its identity provider>
smoke:
	@API="$(API)" TOKEN="$(TOKEN)" scripts/smoke.sh

# The end-to-end chaos run at its large size (make test runs it at 2,400 requests): users like
# and unlike through HTTP while the stream path is faulted, the emulator stopped once and the
# stack restarted once; prints requests, faults by kind and mismatches (which must be 0).
chaos:
	@scripts/venv.sh >/dev/null
	LIKES_CHAOS_REQUESTS=$${LIKES_CHAOS_REQUESTS:-20000} cargo test -p likes-local --test chaos -- --nocapture

# Deliberate defects against each guarantee (testing/mutants/mutants.toml), each run against the
# test named for it in a scratch copy; prints caught/missed per guarantee. Not in `make test`:
# it builds its own target dir and takes tens of minutes. `make mutants ONLY="name ..."`.
mutants:
	scripts/with-moto.sh scripts/mutants.py $(ONLY)

.PHONY: test unit lint fmt build

# Every test: unit tests and integration tests against moto, which this starts and stops.
test:
	infra/with-moto.sh cargo test --workspace --all-targets

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

fmt:
	cargo fmt --all

build:
	cargo build --workspace --release

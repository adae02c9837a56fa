#!/usr/bin/env bats
# make check's closing line (tests/run-all.sh) counts what bats planned but
# never ran as failed: a file whose setup_file fails runs none of its tests,
# and "540 passed, 2 failed" once hid 33 tests that never ran (issue 23).
# Each test here runs the real run-all.sh on a toy suite of its own.

# bats turns every line that starts with the test keyword into a test, even
# in a here-document: the toy files spell it through a variable.
AT=@

setup() {
	ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
	TOY=$BATS_TEST_TMPDIR/e2e
	mkdir -p "$TOY" "$BATS_TEST_TMPDIR/build"
	cat >"$TOY/a.bats" <<-T
		${AT}test "runs" { true; }
	T
}

# run_all: the project's runner on the toy suite, with no unit tests (an
# empty build directory).
run_all() {
	cd "$ROOT" && GS_E2E_DIR=$TOY GPUSLATE_BUILD=$BATS_TEST_TMPDIR/build tests/run-all.sh
}

@test "a failed setup_file counts every test of its file as failed" {
	cat >"$TOY/b.bats" <<-T
		setup_file() { false; }
		${AT}test "one" { true; }
		${AT}test "two" { true; }
		${AT}test "three" { true; }
	T
	run run_all
	[ "$status" -ne 0 ]
	[[ "$output" == *"not executed: 2 of 4 planned tests (counted as failed)"* ]]
	[ "${lines[-1]}" = "1 passed, 3 failed, 0 skipped" ]
}

@test "a suite that runs every planned test is counted as it ran" {
	cat >"$TOY/b.bats" <<-T
		${AT}test "one" { true; }
		${AT}test "two" { false; }
	T
	run run_all
	[ "$status" -ne 0 ]
	[[ "$output" != *"not executed"* ]]
	[ "${lines[-1]}" = "2 passed, 1 failed, 0 skipped" ]
	rm "$TOY/b.bats"
	run run_all
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "1 passed, 0 failed, 0 skipped" ]
}

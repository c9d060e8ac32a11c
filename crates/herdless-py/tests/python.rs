//! The Python tests, run by `cargo test`: the extension module cargo has
//! just built (this crate's cdylib) is installed with the package's Python
//! files into a throwaway virtual environment, and pytest runs
//! `tests/python/` there. pytest's output is printed; a failing pytest fails
//! this test.
//!
//! The environment is made with `python3 -m venv --system-site-packages`
//! (or `$PYTHON`): pytest comes from the interpreter's own packages (`.ci/run`
//! installs it with pip, and then the test needs no network) or, when they
//! lack it, is installed into the throwaway environment. The end-to-end test
//! of `herdless analyze` gets the CLI binary cargo built beside this one
//! (`cargo test --workspace` builds it), as `HERDLESS_BIN`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory cargo writes this profile's artifacts to (`target/debug`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/debug/deps/python-HASH
    exe.parent()
        .and_then(Path::parent)
        .expect("the test binary lives in target/PROFILE/deps")
        .to_path_buf()
}

/// The extension module cargo built for this crate's tests (in `deps/`:
/// the copy beside it is refreshed by `cargo build` only).
fn cdylib(profile: &Path) -> PathBuf {
    let name = if cfg!(target_os = "windows") {
        "herdless_py.dll"
    } else if cfg!(target_os = "macos") {
        "libherdless_py.dylib"
    } else {
        "libherdless_py.so"
    };
    let path = profile.join("deps").join(name);
    assert!(
        path.exists(),
        "{} is missing: cargo builds the crate's cdylib with its tests",
        path.display()
    );
    path
}

/// Runs `cmd`, returning its stdout; panics with its output when it fails.
fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        panic!(
            "{what} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    stdout
}

/// Copies the package's Python files (`python/herdless`) into `dest`.
fn copy_package(src: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).expect("create the package directory");
    for entry in std::fs::read_dir(src).expect("read python/herdless") {
        let entry = entry.expect("a directory entry");
        let path = entry.path();
        if path.is_file() {
            std::fs::copy(&path, dest.join(entry.file_name())).expect("copy a package file");
        }
    }
}

#[test]
fn pytest_passes_against_the_built_extension() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let profile = profile_dir();
    let module = cdylib(&profile);
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let venv = tmp.path().join("venv");

    run(
        Command::new(&python)
            .args(["-m", "venv", "--system-site-packages"])
            .arg(&venv),
        "python3 -m venv",
    );
    let venv_python = if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    };
    let site = run(
        Command::new(&venv_python).args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ]),
        "finding site-packages",
    );
    let package = PathBuf::from(site.trim()).join("herdless");
    copy_package(&crate_dir.join("python").join("herdless"), &package);
    let suffix = if cfg!(windows) { "pyd" } else { "abi3.so" };
    std::fs::copy(&module, package.join(format!("_herdless.{suffix}")))
        .expect("install the extension module");

    // pytest from the interpreter's packages when it has it (`.ci/run` installs
    // it), else into the throwaway environment from the package registry, so a
    // fresh clone's `cargo test --workspace` needs nothing installed by hand.
    let has_pytest = Command::new(&venv_python)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_pytest {
        run(
            Command::new(&venv_python).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "pytest",
            ]),
            "installing pytest into the test's virtual environment (pip install pytest)",
        );
    }

    let mut pytest = Command::new(&venv_python);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"])
        .arg(crate_dir.join("tests").join("python"))
        .current_dir(tmp.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("PYTHONPATH");
    let cli = profile.join(if cfg!(windows) {
        "herdless.exe"
    } else {
        "herdless"
    });
    if cli.exists() {
        pytest.env("HERDLESS_BIN", &cli);
    } else {
        // Alone (`cargo test -p herdless-py`) the CLI may not be built: its
        // test is skipped, and says so. CI runs the whole workspace.
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is missing: `cargo test --workspace` builds the CLI the analyze test runs",
            cli.display()
        );
    }
    let out = pytest.output().expect("start pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(out.status.success(), "pytest failed ({})", out.status);
}

//! Embeds the git commit snowsim is built from as `SNOWSIM_GIT_COMMIT` (`unknown` when git or
//! the repository is missing). Never fails the build.

use std::process::Command;

/// Runs git with `args` in the package's directory; its trimmed stdout, if it succeeded.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let commit = git(&["rev-parse", "--short", "HEAD"]);
    if commit.is_some() {
        // HEAD (in a worktree, its own), the branch it points to and the packed refs: a new
        // commit or a checkout changes one of them.
        let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(git(&["rev-parse", "--git-path", &branch]));
        }
        watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
        for path in watched.into_iter().flatten() {
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    let commit = commit.unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=SNOWSIM_GIT_COMMIT={commit}");
}

//! The keyword-level reading that the ASCII mesh and solution readers share: the tokens with
//! the file's path for errors, skipping unknown keywords (and naming each once), and the
//! end-of-file checks.

use std::collections::HashSet;
use std::path::Path;

use super::ascii_tokens::{Token, Tokens, show};
use super::error::{Location, MeshError};
use super::keywords;

/// Where a reader is in an ASCII file, and the keywords it skipped.
pub(super) struct Cursor<'a> {
    /// The tokens from here on.
    pub(super) tokens: Tokens<'a>,
    /// The file, for errors.
    pub(super) path: &'a Path,
    skipped: Vec<String>,
    skipped_set: HashSet<String>,
}

impl<'a> Cursor<'a> {
    /// At the start of `bytes`, read from `path`.
    pub(super) fn new(bytes: &'a [u8], path: &'a Path) -> Self {
        Self {
            tokens: Tokens::new(bytes),
            path,
            skipped: Vec::new(),
            skipped_set: HashSet::new(),
        }
    }

    /// The unknown keywords skipped, each once, in file order.
    pub(super) fn into_skipped(self) -> Vec<String> {
        self.skipped
    }

    /// Records a skipped keyword and moves to the next known keyword name.
    pub(super) fn skip(&mut self, name: String) -> Result<(), MeshError> {
        if self.skipped_set.insert(name.clone()) {
            self.skipped.push(name);
        }
        while let Some(tok) = self.tokens.peek() {
            if keywords::code(tok.text).is_some() {
                break;
            }
            self.tokens.next_token();
            self.check_not_cut(tok)?;
        }
        Ok(())
    }

    /// An error when `tok`, just read, is the file's last token and the beginning of a keyword
    /// (`Tetra`): the file was cut inside that keyword, and what followed it is lost.
    pub(super) fn check_not_cut(&self, tok: Token<'_>) -> Result<(), MeshError> {
        if self.tokens.peek().is_some() {
            return Ok(());
        }
        match keywords::completion(tok.text) {
            Some(keyword) => Err(MeshError::UnexpectedEnd {
                path: self.path.to_path_buf(),
                at: Location::Line(tok.line),
                what: format!(
                    "a keyword: `{}` looks like the beginning of {keyword}; the file was cut",
                    show(tok.text)
                ),
            }),
            None => Ok(()),
        }
    }

    /// The next token, or an end-of-file error naming what was being read.
    pub(super) fn next(&mut self, what: &dyn Fn() -> String) -> Result<Token<'a>, MeshError> {
        self.tokens
            .next_token()
            .ok_or_else(|| MeshError::UnexpectedEnd {
                path: self.path.to_path_buf(),
                at: Location::Line(self.tokens.last_line()),
                what: what(),
            })
    }

    pub(super) fn bad_token(
        &self,
        tok: Token<'_>,
        expected: &'static str,
        context: String,
    ) -> MeshError {
        MeshError::BadToken {
            path: self.path.to_path_buf(),
            at: Location::Line(tok.line),
            token: show(tok.text),
            expected,
            context,
        }
    }
}

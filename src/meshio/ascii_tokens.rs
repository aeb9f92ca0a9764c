//! Splitting an ASCII mesh file into whitespace-separated tokens with their line numbers.
//!
//! `#` starts a comment that runs to the end of the line. Tokens are byte slices, so a file
//! with non-UTF-8 comments still reads; a non-UTF-8 token is simply not a number.

/// One token and the 1-based line it is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    /// The token's bytes.
    pub text: &'a [u8],
    /// 1-based line.
    pub line: usize,
}

/// A cursor over the tokens of a file; cheap to copy, so it can be saved and resumed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tokens<'a> {
    bytes: &'a [u8],
    pos: usize,
    line: usize,
}

impl<'a> Tokens<'a> {
    /// Tokens of `bytes` from the start.
    pub(crate) fn new(bytes: &'a [u8]) -> Tokens<'a> {
        Tokens {
            bytes,
            pos: 0,
            line: 1,
        }
    }

    /// The line of the file's last character, or 1 for an empty file: where errors found at the
    /// end of the file point.
    pub(crate) fn last_line(&self) -> usize {
        let newlines = self.bytes.iter().filter(|&&b| b == b'\n').count();
        if self.bytes.last() == Some(&b'\n') {
            newlines.max(1)
        } else {
            newlines + 1
        }
    }

    /// Bytes not yet consumed.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next token, or `None` at the end of the file.
    pub(crate) fn next_token(&mut self) -> Option<Token<'a>> {
        loop {
            let &b = self.bytes.get(self.pos)?;
            match b {
                b'\n' => {
                    self.line += 1;
                    self.pos += 1;
                }
                b'#' => {
                    let rest = &self.bytes[self.pos..];
                    self.pos += rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
                }
                _ if b.is_ascii_whitespace() => self.pos += 1,
                _ => break,
            }
        }
        let start = self.pos;
        let rest = &self.bytes[start..];
        let len = rest
            .iter()
            .position(|&c| c.is_ascii_whitespace() || c == b'#')
            .unwrap_or(rest.len());
        self.pos += len;
        Some(Token {
            text: &rest[..len],
            line: self.line,
        })
    }

    /// The next token without consuming it.
    pub(crate) fn peek(&self) -> Option<Token<'a>> {
        let mut ahead = *self;
        ahead.next_token()
    }
}

/// A token as shown in error messages: lossy UTF-8, escaped, at most 40 bytes.
pub(crate) fn show(text: &[u8]) -> String {
    const MAX: usize = 40;
    let shown = String::from_utf8_lossy(&text[..text.len().min(MAX)]);
    let mut out: String = shown.escape_debug().collect();
    if text.len() > MAX {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<(String, usize)> {
        let mut t = Tokens::new(text.as_bytes());
        let mut out = Vec::new();
        while let Some(tok) = t.next_token() {
            out.push((String::from_utf8_lossy(tok.text).into_owned(), tok.line));
        }
        out
    }

    #[test]
    fn splits_on_whitespace_and_comments() {
        let got = all("# head\nA 1\r\n\t2 #x y\n\n  B#c\n3");
        let want = [("A", 2), ("1", 2), ("2", 3), ("B", 5), ("3", 6)];
        let want: Vec<(String, usize)> = want.iter().map(|(s, l)| (s.to_string(), *l)).collect();
        assert_eq!(got, want);
        assert!(all("").is_empty());
        assert!(all("  # only a comment").is_empty());
    }

    #[test]
    fn peek_and_line_at_end() {
        let mut t = Tokens::new(b"a\nb\n\n");
        assert_eq!(t.peek().map(|x| x.text), Some(&b"a"[..]));
        assert_eq!(t.next_token().map(|x| x.line), Some(1));
        assert_eq!(t.next_token().map(|x| x.line), Some(2));
        assert_eq!(t.next_token(), None);
        assert_eq!(t.last_line(), 3);
        assert_eq!(t.remaining(), 0);
        assert_eq!(Tokens::new(b"").last_line(), 1);
        assert_eq!(Tokens::new(b"\n").last_line(), 1);
        assert_eq!(Tokens::new(b"a\nb").last_line(), 2);
    }

    #[test]
    fn show_escapes_and_shortens() {
        assert_eq!(show(b"abc"), "abc");
        assert_eq!(show(b"a\x01"), "a\\u{1}");
        assert_eq!(show(&[b'x'; 50]), format!("{}…", "x".repeat(40)));
        assert_eq!(show(&[0xff]), "\u{fffd}");
    }
}

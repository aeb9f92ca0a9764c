//! OpenCL C identifiers: whether a kernel's name is one, and which names OpenCL reserves.
//!
//! Kept apart so that both the build, which checks the kernel's name, and the naming of the
//! generated variables, which never picks a reserved word for one, can use it.

use crate::gml::error::{GmlError, Result};

pub(super) fn check_identifier(name: &str) -> Result<()> {
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(GmlError::BadName(name.to_string()));
    }
    if is_reserved(name) {
        return Err(GmlError::ReservedName(name.to_string()));
    }
    Ok(())
}

/// Whether OpenCL C (1.2–3.0) reserves `name`: C keywords, address space and access
/// qualifiers, and the built-in scalar, vector and image types.
pub(crate) fn is_reserved(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "bool",
        "half",
        "uchar",
        "ushort",
        "uint",
        "ulong",
        "size_t",
        "ptrdiff_t",
        "intptr_t",
        "uintptr_t",
        "kernel",
        "__kernel",
        "global",
        "__global",
        "local",
        "__local",
        "constant",
        "__constant",
        "private",
        "__private",
        "generic",
        "__generic",
        "read_only",
        "write_only",
        "read_write",
        "__read_only",
        "__write_only",
        "__read_write",
        "image1d_t",
        "image2d_t",
        "image3d_t",
        "sampler_t",
        "event_t",
        "pipe",
        "quad",
        "complex",
        "imaginary",
    ];
    if WORDS.contains(&name) {
        return true;
    }
    // Vector types: char2 … double16, and the reserved quad/half vectors.
    let digits = name.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let base = &name[..name.len() - digits.len()];
    matches!(digits, "2" | "3" | "4" | "8" | "16")
        && matches!(
            base,
            "char"
                | "uchar"
                | "short"
                | "ushort"
                | "int"
                | "uint"
                | "long"
                | "ulong"
                | "float"
                | "double"
                | "half"
                | "bool"
                | "quad"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencl_reserved_words_cannot_name_kernels() {
        for name in ["half", "float4", "kernel", "global", "uint16", "image2d_t"] {
            assert!(
                matches!(check_identifier(name), Err(GmlError::ReservedName(_))),
                "{name}"
            );
        }
        for name in ["halve", "float5", "kernels", "my_float4", "step"] {
            assert!(check_identifier(name).is_ok(), "{name}");
        }
        assert!(matches!(check_identifier("2x"), Err(GmlError::BadName(_))));
    }
}

//! The text chunks of a PNG file, read without decoding the image: a character card keeps its JSON,
//! base64-encoded, in a `tEXt` (or uncompressed `iTXt`) chunk named `ccv3` (spec V3) or `chara`
//! (V2). This module owns the chunk framing (signature, lengths, types, CRCs) and the two text chunk
//! layouts; it must not know what a card is.

use super::CardError;

const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

/// Whether `bytes` start like a PNG file.
pub(crate) fn is_png(bytes: &[u8]) -> bool {
    bytes.starts_with(&SIGNATURE)
}

/// One text chunk: its keyword and its text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TextChunk {
    pub(crate) keyword: String,
    pub(crate) text: String,
}

/// Every `tEXt` and uncompressed `iTXt` chunk, in file order, up to `IEND`. A compressed `iTXt` or a
/// `zTXt` chunk whose keyword a card uses is refused by name (cards are not written that way, and
/// inflating is left to image tools).
/// Time: O(n) in the file's length.
pub(crate) fn text_chunks(bytes: &[u8]) -> Result<Vec<TextChunk>, CardError> {
    if !is_png(bytes) {
        return Err(png_error(
            0,
            "the file does not start with the PNG signature",
        ));
    }
    let mut chunks = Vec::new();
    let mut at = SIGNATURE.len();
    loop {
        let Some(header) = bytes.get(at..at + 8) else {
            return Err(png_error(at, "the file ends before its IEND chunk"));
        };
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let kind = [header[4], header[5], header[6], header[7]];
        let data_start = at + 8;
        let Some(data) = data_start
            .checked_add(length)
            .and_then(|end| bytes.get(data_start..end))
        else {
            return Err(png_error(
                at,
                &format!(
                    "the {} chunk says it holds {length} bytes, more than the file has left",
                    chunk_name(&kind)
                ),
            ));
        };
        let crc_at = data_start + length;
        let Some(crc) = bytes.get(crc_at..crc_at + 4) else {
            return Err(png_error(crc_at, "the file ends inside a chunk's checksum"));
        };
        let stored = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if stored != crc32(&bytes[at + 4..crc_at]) {
            return Err(png_error(
                at,
                &format!(
                    "the {} chunk's checksum does not match its bytes",
                    chunk_name(&kind)
                ),
            ));
        }
        match &kind {
            b"tEXt" => chunks.push(text(data, at)?),
            b"iTXt" => {
                if let Some(chunk) = international_text(data, at)? {
                    chunks.push(chunk);
                }
            }
            b"zTXt" => {
                let keyword = keyword(data, at)?;
                if keyword == "chara" || keyword == "ccv3" {
                    return Err(png_error(
                        at,
                        &format!(
                            "the {keyword} chunk is compressed (zTXt), which cards do not use"
                        ),
                    ));
                }
            }
            b"IEND" => return Ok(chunks),
            _ => {}
        }
        at = crc_at + 4;
    }
}

fn chunk_name(kind: &[u8; 4]) -> String {
    String::from_utf8_lossy(kind).into_owned()
}

fn png_error(offset: usize, problem: &str) -> CardError {
    CardError::Png {
        offset,
        problem: problem.to_owned(),
    }
}

/// The keyword before the first NUL of a text chunk (1 to 79 Latin-1 characters).
fn keyword(data: &[u8], at: usize) -> Result<String, CardError> {
    let end = data
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| png_error(at, "a text chunk has no NUL after its keyword"))?;
    Ok(latin1(&data[..end]))
}

fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// `tEXt`: keyword, NUL, Latin-1 text. Base64 is ASCII, so a card's text reads the same either way.
fn text(data: &[u8], at: usize) -> Result<TextChunk, CardError> {
    let keyword = keyword(data, at)?;
    let text = latin1(&data[keyword.len() + 1..]);
    Ok(TextChunk { keyword, text })
}

/// `iTXt`: keyword, NUL, compression flag, method, language tag, NUL, translated keyword, NUL, UTF-8
/// text. Compressed ones are skipped unless a card's keyword names them.
fn international_text(data: &[u8], at: usize) -> Result<Option<TextChunk>, CardError> {
    let keyword = keyword(data, at)?;
    let rest = &data[keyword.len() + 1..];
    let truncated = || png_error(at, "an iTXt chunk ends inside its header");
    let (&compressed, rest) = rest.split_first().ok_or_else(truncated)?;
    let rest = rest.get(1..).ok_or_else(truncated)?;
    let language_end = rest.iter().position(|&b| b == 0).ok_or_else(truncated)?;
    let rest = &rest[language_end + 1..];
    let translated_end = rest.iter().position(|&b| b == 0).ok_or_else(truncated)?;
    let body = &rest[translated_end + 1..];
    if compressed != 0 {
        if keyword == "chara" || keyword == "ccv3" {
            return Err(png_error(
                at,
                &format!("the {keyword} chunk is compressed (iTXt), which cards do not use"),
            ));
        }
        return Ok(None);
    }
    let text = std::str::from_utf8(body)
        .map_err(|_| png_error(at, &format!("the {keyword} iTXt chunk is not UTF-8")))?;
    Ok(Some(TextChunk {
        keyword,
        text: text.to_owned(),
    }))
}

/// The CRC-32 of PNG (ISO 3309, reflected, polynomial 0xEDB88320), bit by bit: cards are small and
/// this runs once per chunk.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// A PNG file of one 1x1 grey pixel with the given text chunks, for tests and examples.
#[doc(hidden)]
pub fn png_with_text(chunks: &[(&str, &str)]) -> Vec<u8> {
    let mut out = SIGNATURE.to_vec();
    let mut push = |kind: &[u8; 4], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let start = out.len();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        let crc = crc32(&out[start..]);
        out.extend_from_slice(&crc.to_be_bytes());
    };
    // IHDR: 1x1, 8-bit greyscale; IDAT: the zlib stream of one scanline (filter 0, value 0x80).
    push(b"IHDR", &[0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]);
    for (keyword, text) in chunks {
        let mut data = keyword.as_bytes().to_vec();
        data.push(0);
        data.extend_from_slice(text.as_bytes());
        push(b"tEXt", &data);
    }
    push(
        b"IDAT",
        &[
            0x78, 0x01, 0x01, 0x02, 0x00, 0xfd, 0xff, 0x00, 0x80, 0x00, 0x82, 0x00, 0x81,
        ],
    );
    push(b"IEND", &[]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_iend_is_the_known_value() {
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    }

    #[test]
    fn reads_back_the_text_chunks_it_wrote() {
        let png = png_with_text(&[("chara", "eyJhIjoxfQ=="), ("other", "x")]);
        let chunks = text_chunks(&png).unwrap();
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].keyword, "chara");
        assert_eq!(chunks[0].text, "eyJhIjoxfQ==");
    }

    #[test]
    fn damage_is_named_with_its_offset() {
        let mut png = png_with_text(&[("chara", "eyJhIjoxfQ==")]);
        let last = png.len() - 20;
        png[last] ^= 1;
        let error = text_chunks(&png).unwrap_err().to_string();
        assert!(error.contains("checksum does not match"), "{error}");
        let truncated = &png_with_text(&[("chara", "e30=")])[..40];
        let error = text_chunks(truncated).unwrap_err().to_string();
        assert!(
            error.contains("more than the file has left") || error.contains("ends"),
            "{error}"
        );
        assert!(text_chunks(b"GIF89a").is_err());
    }
}

//! A Prometheus-compatible HTTP query API (Prometheus, Thanos, Mimir,
//! VictoriaMetrics: `GET /api/v1/query`), read by `compare --prometheus`:
//! a small blocking HTTP/1.1 client over `std::net::TcpStream`, every
//! response bounded (`MAX_BODY` bytes, `max_series` series), and the
//! parser of an instant vector (`parse_vector`, pure, tested on fixed
//! bodies). Errors are one line: the address that did not answer, the
//! server's status and its error text, a result too large.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// The most bytes one response may hold (a 20,000-series vector with
/// its labels is about 4 MiB).
pub const MAX_BODY: u64 = 32 << 20;

/// The most series one query may return unless told otherwise
/// (`--max-series`): a bound on what vmtrace holds, said when hit.
pub const MAX_SERIES: usize = 20_000;

/// How long to wait for the server to accept and to answer.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Where the query API is: `http://HOST[:PORT][/PREFIX]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    host: String,
    port: u16,
    /// The path before `/api/v1/...`, without a trailing slash.
    prefix: String,
}

impl Endpoint {
    /// Parses `http://host:port/prefix`; https is refused (put a local
    /// proxy in front), as is anything but a plain URL.
    pub fn parse(url: &str) -> Result<Self> {
        let Some(rest) = url.strip_prefix("http://") else {
            if url.starts_with("https://") {
                bail!(
                    "--prometheus {url}: https is not supported; give an http:// URL (a local proxy)"
                );
            }
            bail!("--prometheus {url}: not a URL; give http://HOST:PORT");
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
                h,
                p.parse::<u16>()
                    .ok()
                    .with_context(|| format!("--prometheus {url}: bad port {p:?}"))?,
            ),
            _ => (authority, 80),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty()
            || !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-:".contains(c))
        {
            bail!("--prometheus {url}: bad host {host:?}");
        }
        if path.contains(['?', '#', ' ']) {
            bail!("--prometheus {url}: give the server's URL without a query");
        }
        Ok(Endpoint {
            host: host.into(),
            port,
            prefix: path.trim_end_matches('/').into(),
        })
    }

    /// `host:port`, as said in errors.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// One series of an instant vector: its labels and value.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Evaluates `promql` at `time` (RFC 3339 or a Unix time; None: now)
/// and returns the vector, at most `max_series` series.
pub fn query(
    ep: &Endpoint,
    promql: &str,
    time: Option<&str>,
    max_series: usize,
) -> Result<Vec<Series>> {
    let mut target = format!("{}/api/v1/query?query={}", ep.prefix, encode(promql));
    if let Some(t) = time {
        target.push_str(&format!("&time={}", encode(t)));
    }
    let (status, body) = get(ep, &target)?;
    let text = String::from_utf8_lossy(&body);
    if !(200..300).contains(&status) {
        bail!(
            "Prometheus at {} answered {status}: {}",
            ep.address(),
            error_text(&text)
        );
    }
    parse_vector(&text, max_series)
        .with_context(|| format!("Prometheus at {}: query {promql}", ep.address()))
}

/// One GET, `Connection: close`: the status and the (de-chunked) body,
/// at most `MAX_BODY` bytes.
fn get(ep: &Endpoint, target: &str) -> Result<(u16, Vec<u8>)> {
    let unreachable =
        |e: std::io::Error| anyhow::anyhow!("Prometheus at {} unreachable: {e}", ep.address());
    let addrs: Vec<_> = (ep.host.as_str(), ep.port)
        .to_socket_addrs()
        .map_err(unreachable)?
        .collect();
    let mut last = None;
    let mut stream = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, TIMEOUT) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let mut stream = match stream {
        Some(s) => s,
        None => {
            return Err(unreachable(
                last.unwrap_or_else(|| std::io::Error::other("no address")),
            ));
        }
    };
    stream
        .set_read_timeout(Some(TIMEOUT))
        .map_err(unreachable)?;
    stream
        .set_write_timeout(Some(TIMEOUT))
        .map_err(unreachable)?;
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\n\
         User-Agent: vmtrace/{}\r\nConnection: close\r\n\r\n",
        ep.address(),
        env!("CARGO_PKG_VERSION")
    )
    .map_err(unreachable)?;
    let mut r = BufReader::new(stream.take(MAX_BODY + 64 * 1024));
    read_response(&mut r).map_err(|e| anyhow::anyhow!("Prometheus at {}: {e}", ep.address()))
}

/// The status line, headers and body of one response (chunked or not).
fn read_response(r: &mut impl BufRead) -> Result<(u16, Vec<u8>)> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .with_context(|| format!("not an HTTP response: {:?}", line.trim_end()))?;
    let (mut chunked, mut length) = (false, None);
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("content-length") {
            length = value.parse::<u64>().ok();
        }
    }
    let too_large = || anyhow::anyhow!("response larger than {} MiB", MAX_BODY >> 20);
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let size_hex = line.trim_end().split(';').next().unwrap_or("");
            let size = u64::from_str_radix(size_hex, 16)
                .with_context(|| format!("bad chunk size {size_hex:?}"))?;
            if size == 0 {
                break;
            }
            if body.len() as u64 + size > MAX_BODY {
                return Err(too_large());
            }
            let start = body.len();
            body.resize(start + size as usize, 0);
            r.read_exact(&mut body[start..])?;
            line.clear();
            r.read_line(&mut line)?;
        }
    } else {
        if length.is_some_and(|l| l > MAX_BODY) {
            return Err(too_large());
        }
        r.take(MAX_BODY + 1).read_to_end(&mut body)?;
        if body.len() as u64 > MAX_BODY {
            return Err(too_large());
        }
    }
    Ok((status, body))
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The `error` of an API error body, or the body's first line (at most
/// 200 characters): one line either way.
fn error_text(body: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string));
    let text = from_json.unwrap_or_else(|| body.lines().next().unwrap_or("").to_string());
    let one: String = text.chars().filter(|c| !c.is_control()).take(200).collect();
    if one.is_empty() {
        "(no body)".into()
    } else {
        one
    }
}

/// Parses an instant-vector answer (`{"status":"success","data":
/// {"resultType":"vector","result":[{"metric":{..},"value":[t,"v"]}]}}`);
/// refuses an error answer, another result type, and more than
/// `max_series` series.
pub fn parse_vector(body: &str, max_series: usize) -> Result<Vec<Series>> {
    let v: serde_json::Value = serde_json::from_str(body).context("the answer is not JSON")?;
    if v.get("status").and_then(|s| s.as_str()) != Some("success") {
        bail!("the query failed: {}", error_text(body));
    }
    let data = v.get("data").context("the answer has no data")?;
    let kind = data
        .get("resultType")
        .and_then(|t| t.as_str())
        .unwrap_or("");
    if kind != "vector" {
        bail!("the answer is a {kind:?}, not an instant vector");
    }
    let result = data
        .get("result")
        .and_then(|r| r.as_array())
        .context("the answer has no result")?;
    if result.len() > max_series {
        bail!(
            "result too large: {} series, more than the limit of {max_series} \
             (--max-series, or narrow the groups or --cgroup)",
            result.len()
        );
    }
    result.iter().map(series).collect()
}

fn series(s: &serde_json::Value) -> Result<Series> {
    let labels = s
        .get("metric")
        .and_then(|m| m.as_object())
        .context("a series without labels")?
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    let value = s
        .get("value")
        .and_then(|v| v.get(1))
        .and_then(|v| v.as_str())
        .context("a series without a value")?;
    // Go writes NaN and the infinities as these words.
    let value = match value {
        "NaN" => f64::NAN,
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v
            .parse::<f64>()
            .with_context(|| format!("bad value {v:?}"))?,
    };
    Ok(Series { labels, value })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTOR: &str = r#"{"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"instance":"127.0.0.1:9911","job":"vmtrace"},"value":[1700000000.123,"0.25"]},
        {"metric":{"instance":"127.0.0.1:9912"},"value":[1700000000.123,"NaN"]}]}}"#;

    #[test]
    fn a_vector_parses_into_labelled_values() {
        let v = parse_vector(VECTOR, 10).expect("a vector");
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].labels["instance"], "127.0.0.1:9911");
        assert_eq!(v[0].labels["job"], "vmtrace");
        assert_eq!(v[0].value, 0.25);
        assert!(v[1].value.is_nan());
    }

    #[test]
    fn too_many_series_is_refused_and_said() {
        let e = parse_vector(VECTOR, 1).expect_err("over the bound");
        let s = format!("{e:#}");
        assert!(
            s.contains("result too large: 2 series") && s.contains("limit of 1"),
            "{s}"
        );
        assert!(!s.contains('\n'));
    }

    #[test]
    fn errors_and_other_shapes_are_one_line() {
        let err =
            r#"{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected"}"#;
        let s = format!("{:#}", parse_vector(err, 10).expect_err("an error"));
        assert!(s.contains("parse error: unexpected"), "{s}");
        let matrix = r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert!(
            format!("{:#}", parse_vector(matrix, 10).expect_err("a matrix")).contains("matrix")
        );
        assert!(parse_vector("<html>", 10).is_err());
        assert_eq!(error_text("line one\nline two"), "line one");
        assert_eq!(error_text(""), "(no body)");
    }

    #[test]
    fn chunked_and_plain_bodies_are_read_and_bounded() {
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        let (st, body) = read_response(&mut chunked.as_bytes()).expect("chunked");
        assert_eq!((st, body.as_slice()), (200, b"hello world".as_slice()));
        let plain = "HTTP/1.1 422 Unprocessable\r\nContent-Length: 3\r\n\r\nbad";
        assert_eq!(read_response(&mut plain.as_bytes()).expect("plain").0, 422);
        let huge = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        let e = read_response(&mut huge.as_bytes()).expect_err("too large");
        assert!(e.to_string().contains("larger than"), "{e}");
        let chunk = format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
            MAX_BODY + 1
        );
        assert!(read_response(&mut chunk.as_bytes()).is_err());
    }

    #[test]
    fn urls_parse_and_bad_ones_are_refused() {
        let e = Endpoint::parse("http://127.0.0.1:9090/prom/").expect("a URL");
        assert_eq!(e.address(), "127.0.0.1:9090");
        assert_eq!(e.prefix, "/prom");
        assert_eq!(
            Endpoint::parse("http://[::1]:9090").expect("v6").address(),
            "[::1]:9090"
        );
        assert_eq!(
            Endpoint::parse("http://prom").expect("no port").address(),
            "prom:80"
        );
        for bad in [
            "https://x",
            "x:9090",
            "http://x:99999",
            "http://x:9090/?q=1",
            "http://",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(encode("a{b=\"c\"} [5m]"), "a%7Bb%3D%22c%22%7D%20%5B5m%5D");
    }

    #[test]
    fn an_unreachable_server_is_named_by_address() {
        // A port nothing listens on: bind one, note it, free it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let ep = Endpoint::parse(&format!("http://127.0.0.1:{port}")).expect("a URL");
        let e = query(&ep, "up", None, 10).expect_err("nothing listens");
        let s = format!("{e:#}");
        assert!(
            s.starts_with(&format!("Prometheus at 127.0.0.1:{port} unreachable")),
            "{s}"
        );
    }
}

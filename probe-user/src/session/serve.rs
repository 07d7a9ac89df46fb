//! `attach --serve ADDR`: vmtrace as a Prometheus exporter. An HTTP/1.1
//! server (hyper) answers `GET /metrics` in a process of its own that
//! runs as `nobody` with no capability (`host::privsep`); each scrape is
//! a byte to the attach loop, the one owner of the probes, which reads
//! the maps, renders the exposition (`view::prometheus`) and sends the
//! text back. Nothing is kept per scrape.
//!
//! Per-cgroup rows live in the kernel table `CGROUP_STALLS`, whose size
//! is the cap (`--max-cgroups`); their names come from a walk of the
//! cgroup2 mount, redone when a row's cgroup is unknown (at most every
//! few seconds), and the rows of cgroups that are gone are deleted, so
//! memory stays bounded while cgroups come and go.
//!
//! Any local user can connect, so a connection costs little and cannot
//! hold up others: it is accepted first and then given one of
//! `MAX_CONNECTIONS` slots; when all are taken, the connection whose
//! last request is the oldest is closed for it (the accept loop never
//! waits for a slot, and pauses after a failed accept: out of
//! descriptors, it would spin); its request headers must arrive within
//! `HEADER_TIMEOUT` and it lives at most `CONNECTION_LIFETIME`. An
//! exposition is rendered at most once per `RENDER_EVERY` per format and
//! shared by the scrapes in between. A request whose Host header names
//! neither an IP address, localhost nor this machine is refused (421),
//! so a web page cannot read /metrics through DNS rebinding.

use std::{
    collections::HashMap,
    net::SocketAddr,
    os::fd::AsRawFd,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use http_body_util::Full;
use hyper::{Request, Response, StatusCode, body::Bytes, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{Semaphore, mpsc, oneshot};
use vmtrace_common::{Counter, Hist, ReclaimContext};

use crate::{
    host::{cgroupfs, membox::CgroupMounts, privsep, proc},
    kernel::{
        collect,
        probes::{MetricId, Probes},
    },
    view::prometheus::{
        self, BuildInfo, CgroupRow, Exposition, Format, OVERFLOW_CGROUP, ProgramCost,
    },
};

/// What `--serve` was given.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    /// A non-loopback address was asked for explicitly (`--serve-public`).
    pub public: bool,
    pub max_cgroups: u32,
    /// `--cgroup-buckets coarse`: per-cgroup histograms with a third of
    /// the series (`prometheus::cgroup_bounds`).
    pub coarse_cgroups: bool,
}

/// Checks the address against `--serve-public`: one-line errors.
pub fn check(opts: &ServeOptions) -> Result<()> {
    if !opts.listen.ip().is_loopback() && !opts.public {
        bail!(
            "--serve {} is not a loopback address: anyone who can reach it reads what the \
             machine's tasks do; add --serve-public to mean it, or serve on 127.0.0.1",
            opts.listen
        );
    }
    Ok(())
}

/// One scrape waiting for its exposition.
pub struct Scrape {
    format: Format,
    reply: oneshot::Sender<String>,
}

impl Scrape {
    pub fn answer(self, exporter: &mut Exporter, probes: &mut Probes) {
        let text = exporter.exposition(probes, self.format);
        let _ = self.reply.send(text);
    }
}

/// Most connections served at once; one more is closed as it comes.
const MAX_CONNECTIONS: usize = 512;
/// A connection's request headers must arrive within this.
const HEADER_TIMEOUT: Duration = Duration::from_secs(2);
/// A connection (keep-alive included) is closed after this.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// Scrapes within this of the last rendering share it.
const RENDER_EVERY: Duration = Duration::from_secs(1);

/// Whether a request's Host header may reach /metrics: none (HTTP/1.0),
/// an IP address, localhost, or this machine's name (`hostname`), each
/// with any port. DNS rebinding needs a name that is none of these.
pub fn host_allowed(host: Option<&str>, hostname: &str) -> bool {
    let Some(host) = host else {
        return true;
    };
    let name = match host.strip_prefix('[') {
        // [v6]:port
        Some(rest) => match rest.split_once(']') {
            Some((v6, _)) => return v6.parse::<std::net::Ipv6Addr>().is_ok(),
            None => return false,
        },
        None => host.rsplit_once(':').map_or(host, |(n, _)| n),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name.parse::<std::net::Ipv4Addr>().is_ok()
        || name == "localhost"
        || (!hostname.is_empty() && name == hostname.to_ascii_lowercase())
}

/// The HTTP server, forked off (`host::privsep`): the parent's side.
/// Dropped, it shuts the socket pair down, which ends the child, and
/// reaps it.
pub struct Server {
    child: privsep::Child,
    sock: Option<std::os::unix::net::UnixStream>,
    /// The same socket, to shut down from here whoever holds it.
    stop: std::os::unix::net::UnixStream,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop.shutdown(std::net::Shutdown::Both);
        self.child.reap();
    }
}

impl Server {
    /// Relays the child's scrapes on `rt`: they arrive on the returned
    /// channel, which closes when the child is gone.
    pub fn scrapes(&mut self, rt: &tokio::runtime::Runtime) -> Result<mpsc::Receiver<Scrape>> {
        let sock = self
            .sock
            .take()
            .context("the HTTP server's scrapes are already relayed")?;
        sock.set_nonblocking(true)?;
        let _in = rt.enter();
        let sock = tokio::net::UnixStream::from_std(sock)?;
        let (tx, rx) = mpsc::channel::<Scrape>(1);
        rt.spawn(answer_child(sock, tx));
        Ok(rx)
    }
}

/// Binds the address, then forks the HTTP server into a process of its
/// own that drops root (`host::privsep`); call it while nothing is
/// attached yet (one thread, no descriptor worth keeping from it).
pub fn start(opts: &ServeOptions) -> Result<Server> {
    if !opts.listen.ip().is_loopback() {
        eprintln!(
            "vmtrace: warning: serving /metrics on {}, not a loopback address: put it behind \
             a firewall",
            opts.listen
        );
    }
    let listener = std::net::TcpListener::bind(opts.listen).with_context(|| {
        format!(
            "cannot listen on {} (in use by another exporter, or not an address of this \
             machine); give another with --serve",
            opts.listen
        )
    })?;
    listener.set_nonblocking(true)?;
    let (parent_end, child_end) =
        std::os::unix::net::UnixStream::pair().context("a socket pair for the HTTP server")?;
    let hostname = proc::hostname().unwrap_or_default();
    let keep = [listener.as_raw_fd(), child_end.as_raw_fd()];
    match privsep::fork_unprivileged(&keep)? {
        privsep::Forked::Child => serve_in_child(listener, child_end, hostname),
        privsep::Forked::Parent(child) => {
            eprintln!("vmtrace: serving http://{}/metrics", opts.listen);
            Ok(Server {
                child,
                stop: parent_end.try_clone()?,
                sock: Some(parent_end),
            })
        }
    }
}

/// The child: serves connections until the parent's end closes, then
/// exits (never returning into the parent's code).
fn serve_in_child(
    listener: std::net::TcpListener,
    sock: std::os::unix::net::UnixStream,
    hostname: String,
) -> ! {
    let served = (|| -> Result<()> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            sock.set_nonblocking(true)?;
            let sock = tokio::net::UnixStream::from_std(sock)?;
            let (tx, rx) = mpsc::channel::<Scrape>(MAX_CONNECTIONS);
            tokio::spawn(accept_loop(listener, tx, hostname.into()));
            ask_parent(sock, rx).await;
            Ok(())
        })
    })();
    if let Err(e) = served {
        eprintln!("vmtrace: the HTTP server stopped: {e:#}");
    }
    // SAFETY: ends the forked child without the parent's destructors.
    unsafe { libc::_exit(0) }
}

/// The relay's wire: a byte asks for an exposition in a format, a
/// little-endian u32 length and the text answer it.
fn format_byte(format: Format) -> u8 {
    match format {
        Format::Prometheus => 0,
        Format::OpenMetrics => 1,
    }
}

fn byte_format(b: u8) -> Option<Format> {
    match b {
        0 => Some(Format::Prometheus),
        1 => Some(Format::OpenMetrics),
        _ => None,
    }
}

/// In the child: each scrape asked of the parent, one at a time; ends
/// when the parent's end closes.
async fn ask_parent(mut sock: tokio::net::UnixStream, mut rx: mpsc::Receiver<Scrape>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let scrape = tokio::select! {
            scrape = rx.recv() => match scrape {
                Some(s) => s,
                None => return,
            },
            // The parent writes only when asked: readable now means its
            // end closed (it stopped, or died: the signal it sends at
            // death needs a capability it dropped).
            _ = sock.readable() => {
                let mut b = [0u8; 1];
                match sock.try_read(&mut b) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    _ => return,
                }
            }
        };
        if sock.write_all(&[format_byte(scrape.format)]).await.is_err() {
            return;
        }
        let mut len = [0u8; 4];
        if sock.read_exact(&mut len).await.is_err() {
            return;
        }
        let mut text = vec![0u8; u32::from_le_bytes(len) as usize];
        if sock.read_exact(&mut text).await.is_err() {
            return;
        }
        let _ = scrape
            .reply
            .send(String::from_utf8_lossy(&text).into_owned());
    }
}

/// In the parent: a byte from the child becomes a scrape for the attach
/// loop; anything else from it, or its end closing, ends the relay (and
/// closes the channel, which stops the loop).
async fn answer_child(mut sock: tokio::net::UnixStream, tx: mpsc::Sender<Scrape>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let mut b = [0u8; 1];
        if sock.read_exact(&mut b).await.is_err() {
            return;
        }
        let Some(format) = byte_format(b[0]) else {
            return;
        };
        let (reply, answer) = oneshot::channel();
        if tx.send(Scrape { format, reply }).await.is_err() {
            return;
        }
        let Ok(text) = answer.await else {
            return;
        };
        let Ok(len) = u32::try_from(text.len()) else {
            return;
        };
        if sock.write_all(&len.to_le_bytes()).await.is_err()
            || sock.write_all(text.as_bytes()).await.is_err()
        {
            return;
        }
    }
}

/// Accepts connections and gives each a slot.
async fn accept_loop(
    listener: tokio::net::TcpListener,
    tx: mpsc::Sender<Scrape>,
    hostname: Arc<str>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let open = Open::default();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors (EMFILE) or memory: retrying at once
            // would spin; the pause lets connections end.
            Err(_) => {
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        let conn = Conn {
            tx: tx.clone(),
            hostname: hostname.clone(),
            open: open.clone(),
        };
        match slots.clone().try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(conn.serve(stream, permit));
            }
            // Full: the connection idle longest is closed for this
            // one (a flood of connections that each ask now and then
            // cannot keep a scraper out), which waits for its slot
            // without holding up the accept loop.
            Err(_) => {
                open.close_most_idle();
                let slots = slots.clone();
                tokio::spawn(async move {
                    if let Ok(Ok(permit)) =
                        tokio::time::timeout(HEADER_TIMEOUT, slots.acquire_owned()).await
                    {
                        conn.serve(stream, permit).await;
                    }
                });
            }
        }
    }
}

/// A pause after a failed accept (no descriptors left: RLIMIT_NOFILE).
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// The open connections: when each last began or ended a request, and
/// how to close it.
#[derive(Clone, Default)]
struct Open(Arc<std::sync::Mutex<OpenConns>>);

#[derive(Default)]
struct OpenConns {
    next: u64,
    conns: HashMap<u64, (Instant, Arc<tokio::sync::Notify>)>,
}

impl Open {
    fn add(&self) -> (u64, Arc<tokio::sync::Notify>) {
        let mut o = self.0.lock().unwrap_or_else(|p| p.into_inner());
        o.next += 1;
        let (id, close) = (o.next, Arc::new(tokio::sync::Notify::new()));
        o.conns.insert(id, (Instant::now(), close.clone()));
        (id, close)
    }

    fn remove(&self, id: u64) {
        let mut o = self.0.lock().unwrap_or_else(|p| p.into_inner());
        o.conns.remove(&id);
    }

    /// A request on `id` began or ended now.
    fn active(&self, id: u64) {
        let mut o = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = o.conns.get_mut(&id) {
            c.0 = Instant::now();
        }
    }

    /// Closes the connection whose last request is the oldest.
    fn close_most_idle(&self) {
        let mut o = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let idlest = o
            .conns
            .iter()
            .min_by_key(|(_, (at, _))| *at)
            .map(|(id, (_, close))| (*id, close.clone()));
        if let Some((id, close)) = idlest {
            o.conns.remove(&id);
            close.notify_one();
        }
    }
}

/// What a connection's task needs.
struct Conn {
    tx: mpsc::Sender<Scrape>,
    hostname: Arc<str>,
    open: Open,
}

impl Conn {
    /// Serves one connection until it ends, its lifetime is up, or it is
    /// closed for a newcomer; its slot goes with it.
    async fn serve(self, stream: tokio::net::TcpStream, permit: tokio::sync::OwnedSemaphorePermit) {
        let (id, close) = self.open.add();
        let (tx, hostname, open) = (self.tx, self.hostname, self.open.clone());
        let service = service_fn(move |req| {
            let (tx, hostname, open) = (tx.clone(), hostname.clone(), open.clone());
            async move {
                open.active(id);
                let r = respond(req, tx, hostname).await;
                open.active(id);
                r
            }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .serve_connection(TokioIo::new(stream), service);
        tokio::select! {
            _ = tokio::time::timeout(CONNECTION_LIFETIME, conn) => {}
            () = close.notified() => {}
        }
        self.open.remove(id);
        drop(permit);
    }
}

async fn respond(
    req: Request<hyper::body::Incoming>,
    tx: mpsc::Sender<Scrape>,
    hostname: Arc<str>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let text = |status: StatusCode, body: &str| {
        let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
        *r.status_mut() = status;
        r
    };
    let host = req
        .headers()
        .get(hyper::header::HOST)
        .map(|v| v.to_str().unwrap_or("?"));
    if !host_allowed(host, &hostname) {
        return Ok(text(
            StatusCode::MISDIRECTED_REQUEST,
            "vmtrace: this Host is not this machine: scrape it by IP address, localhost or \
             its hostname\n",
        ));
    }
    match (req.method(), req.uri().path()) {
        (&hyper::Method::GET, "/metrics") => {
            let accept = req
                .headers()
                .get(hyper::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let format = Format::from_accept(accept);
            let (reply, answer) = oneshot::channel();
            if tx.send(Scrape { format, reply }).await.is_err() {
                return Ok(text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "vmtrace is stopping\n",
                ));
            }
            match answer.await {
                Ok(body) => {
                    let mut r = Response::new(Full::new(Bytes::from(body)));
                    if let Ok(v) = hyper::header::HeaderValue::from_str(format.content_type()) {
                        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
                    }
                    Ok(r)
                }
                Err(_) => Ok(text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "vmtrace is stopping\n",
                )),
            }
        }
        (&hyper::Method::GET, "/") => Ok(text(
            StatusCode::OK,
            "vmtrace: reclaim, fault and swap metrics at /metrics\n",
        )),
        _ => Ok(text(StatusCode::NOT_FOUND, "not found: try /metrics\n")),
    }
}

/// The cgroup tree is walked again this often (removed cgroups expire),
/// and as soon as a row of an unknown cgroup appears, but not twice
/// within `WALK_AGAIN`.
const WALK_EVERY: Duration = Duration::from_secs(5);
const WALK_AGAIN: Duration = Duration::from_secs(1);

/// Builds expositions from the probes, and keeps the per-cgroup table
/// to the cgroups that exist.
pub struct Exporter {
    cgroup2: Option<PathBuf>,
    /// cgroup id -> path under the cgroup2 mount ("/" for its root).
    names: HashMap<u64, String>,
    walked: Option<Instant>,
    max_cgroups: u32,
    coarse_cgroups: bool,
    expired: u64,
    /// The last exposition per format, and when it was rendered.
    rendered: Vec<(Format, Instant, String)>,
}

impl Exporter {
    pub fn new(max_cgroups: u32, coarse_cgroups: bool) -> Exporter {
        let cgroup2 = proc::read_mountinfo()
            .ok()
            .and_then(|m| CgroupMounts::parse(&m).v2);
        Exporter {
            cgroup2,
            names: HashMap::new(),
            walked: None,
            max_cgroups,
            coarse_cgroups,
            expired: 0,
            rendered: Vec::new(),
        }
    }

    /// The exposition in `format`: the last one when it is younger than
    /// `RENDER_EVERY`, else rendered afresh.
    pub fn exposition(&mut self, probes: &mut Probes, format: Format) -> String {
        if let Some((_, _, text)) = self
            .rendered
            .iter()
            .find(|(f, at, _)| *f == format && at.elapsed() < RENDER_EVERY)
        {
            return text.clone();
        }
        let text = self.render(probes, format);
        self.rendered.retain(|(f, _, _)| *f != format);
        self.rendered.push((format, Instant::now(), text.clone()));
        text
    }

    fn walk(&mut self) {
        self.names.clear();
        if let Some(root) = self.cgroup2.clone() {
            cgroupfs::walk(&root, &root, &mut self.names, 0);
        }
        self.walked = Some(Instant::now());
    }

    /// The exposition now. Rows of cgroups that no longer exist are
    /// deleted from the kernel table (after a fresh walk).
    pub fn render(&mut self, probes: &mut Probes, format: Format) -> String {
        let mut e = Exposition {
            max_cgroups: self.max_cgroups,
            coarse_cgroups: self.coarse_cgroups,
            build: BuildInfo {
                version: env!("CARGO_PKG_VERSION").into(),
                kernel: proc::kernel_release(),
            },
            probes: MetricId::ALL
                .iter()
                .map(|&m| {
                    let attached = probes.plan.is_enabled(m)
                        && !probes.attach_failures.iter().any(|(f, _)| *f == m);
                    (m.name(), attached)
                })
                .collect(),
            programs: probes
                .program_stats()
                .into_iter()
                .map(|p| ProgramCost {
                    program: p.program,
                    runs: p.runs,
                    run_ns: p.run_ns,
                    misses: p.misses,
                })
                .collect(),
            ..Default::default()
        };
        if let Ok(t) = collect::read_aggregates(probes) {
            e.hists = Hist::ALL
                .iter()
                .filter(|&&h| t.hist(h).iter().any(|&n| n > 0) || always_shown(h))
                .map(|&h| (h, t.hist(h).to_vec()))
                .collect();
            e.counters = Counter::ALL.iter().map(|&c| (c, t.counter(c))).collect();
            e.lru = ReclaimContext::ALL
                .iter()
                .map(|&c| {
                    let rows = t.lru.iter().filter(|r| r.context == c);
                    let (s, r) = rows.fold((0, 0), |(s, r), row| {
                        (s + row.totals.nr_scanned, r + row.totals.nr_reclaimed)
                    });
                    (c, s, r)
                })
                .collect();
        }
        let mut rows = collect::read_cgroup_stalls(probes).unwrap_or_default();
        let since = self.walked.map(|t| t.elapsed());
        let unknown = rows
            .iter()
            .any(|(id, _)| *id != 0 && !self.names.contains_key(id));
        let due = match since {
            None => true,
            Some(s) => s >= WALK_EVERY || (unknown && s >= WALK_AGAIN),
        };
        if due {
            self.walk();
            // A row whose cgroup the fresh walk did not find: removed.
            let gone: Vec<u64> = rows
                .iter()
                .map(|(id, _)| *id)
                .filter(|id| *id != 0 && !self.names.contains_key(id))
                .collect();
            if let Ok(n) = collect::forget_cgroups(probes, &gone) {
                self.expired += n as u64;
                rows.retain(|(id, _)| !gone.contains(id));
            }
        }
        for (id, stalls) in rows {
            let name = if id == 0 {
                OVERFLOW_CGROUP.to_string()
            } else if let Some(n) = self.names.get(&id) {
                n.clone()
            } else {
                // Created within the last second: named by id until
                // the next walk.
                format!("(id {id})")
            };
            let psi_us = (id != 0).then(|| self.cgroup_psi(&name)).flatten();
            e.cgroups.push(CgroupRow {
                name,
                stalls,
                psi_us,
            });
        }
        e.cgroups.sort_by(|a, b| a.name.cmp(&b.name));
        e.cgroups_expired = self.expired;
        e.psi_us = proc::read_psi().map(|p| (p.some_us, p.full_us));
        let vmstat = crate::host::proc::read_vmstat().unwrap_or_default();
        e.vmstat = prometheus::VMSTAT_ITEMS
            .iter()
            .filter(|i| vmstat.0.contains_key(**i))
            .map(|&i| (i, vmstat.get(i)))
            .collect();
        prometheus::render(&e, format)
    }

    fn cgroup_psi(&self, name: &str) -> Option<(u64, u64)> {
        let dir = self.cgroup2.as_ref()?.join(name.trim_start_matches('/'));
        let p = cgroupfs::cgroup_psi(&dir)?;
        Some((p.some_us, p.full_us))
    }
}

/// The reclaim stall histograms are shown even while empty (a scraper
/// sees the series from the start); others once they have a value.
fn always_shown(h: Hist) -> bool {
    matches!(h, Hist::DirectReclaim | Hist::MemcgReclaim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_machines_names_reach_metrics() {
        for ok in [
            None,
            Some("127.0.0.1:9435"),
            Some("10.1.2.3"),
            Some("[::1]:9435"),
            Some("localhost:9435"),
            Some("LOCALHOST."),
            Some("build-7:9435"),
        ] {
            assert!(host_allowed(ok, "build-7"), "{ok:?}");
        }
        for bad in [
            Some("evil.example:9435"),
            Some("127.0.0.1.evil.example"),
            Some("[::1"),
            Some("build-7.evil.example"),
            Some("?"),
        ] {
            assert!(!host_allowed(bad, "build-7"), "{bad:?}");
        }
        assert!(!host_allowed(Some(":9435"), ""));
    }

    #[test]
    fn public_addresses_need_the_flag() {
        let opts = |a: &str, public| ServeOptions {
            listen: a.parse().expect("address"),
            public,
            max_cgroups: 8,
            coarse_cgroups: false,
        };
        assert!(check(&opts("127.0.0.1:9000", false)).is_ok());
        assert!(check(&opts("[::1]:9000", false)).is_ok());
        let msg = format!(
            "{:#}",
            check(&opts("0.0.0.0:9000", false)).expect_err("refused")
        );
        assert!(msg.contains("--serve-public"), "{msg}");
        assert!(!msg.contains('\n'));
        assert!(check(&opts("0.0.0.0:9000", true)).is_ok());
    }
}

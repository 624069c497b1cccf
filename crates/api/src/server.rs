//! The gRPC server (the `server` feature, on by default): tonic's
//! transport on a Unix socket or TCP, with TLS. Without the feature the
//! crate is the generated messages and [`crate::convert`] only, which is
//! what the fuzz targets need (they then build without tonic, hyper,
//! rustls and the speaker).

use std::sync::Arc;

use bgp_speaker::daemon::control::Control;
use config::{Api, ApiListen, ApiTls};
use tokio::sync::oneshot;
use tracing::{info, warn};

use crate::{apipb, Service};

/// Largest message accepted from a client (AddPathStream batches).
pub const MAX_MESSAGE: usize = 16 << 20;

/// Keeps the server running; dropping it stops the listener.
struct Guard(Option<oneshot::Sender<()>>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// Reads `api.tls_*` into tonic's (rustls) server configuration: the
/// certificate chain and key, and with `tls_client_ca` the CAs a client
/// certificate must chain to (then required: a client without one fails
/// the handshake).
pub fn tls_config(t: &ApiTls) -> Result<tonic::transport::ServerTlsConfig, String> {
    use tonic::transport::{Certificate, Identity, ServerTlsConfig};
    let read = |key: &str, p: &std::path::Path| {
        std::fs::read(p).map_err(|e| format!("api.{key}: cannot read {}: {e}", p.display()))
    };
    let cert = read("tls_cert", &t.cert)?;
    let key = read("tls_key", &t.key)?;
    let mut c = ServerTlsConfig::new().identity(Identity::from_pem(cert, key));
    if let Some(ca) = &t.client_ca {
        c = c.client_ca_root(Certificate::from_pem(read("tls_client_ca", ca)?));
    }
    Ok(c)
}

/// Starts the API on `rt` ([`bgp_speaker::daemon::Hooks::api`]).
pub fn serve(
    ctl: Arc<Control>,
    cfg: &Api,
    rt: &tokio::runtime::Handle,
) -> Result<Box<dyn std::any::Any + Send>, String> {
    let _enter = rt.enter();
    let svc = apipb::gobgp_api_server::GobgpApiServer::new(Service::new(ctl))
        .max_decoding_message_size(MAX_MESSAGE);
    let (tx, rx) = oneshot::channel::<()>();
    let shutdown = async {
        let _ = rx.await;
    };
    let mut builder = tonic::transport::Server::builder();
    if let (ApiListen::Tcp(_), Some(tls)) = (&cfg.listen, &cfg.tls) {
        builder = builder
            .tls_config(tls_config(tls)?)
            .map_err(|e| format!("api: TLS: {e}"))?;
    }
    let router = builder.add_service(svc);
    match &cfg.listen {
        ApiListen::Unix(path) => {
            use std::os::unix::fs::PermissionsExt;
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            // A socket left by a previous run.
            if std::fs::symlink_metadata(path)
                .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
            {
                let _ = std::fs::remove_file(path);
            }
            let l = std::os::unix::net::UnixListener::bind(path)
                .map_err(|e| format!("api.listen: cannot bind {}: {e}", path.display()))?;
            // Only tesserad's user may drive the API.
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("api.listen: chmod {}: {e}", path.display()))?;
            l.set_nonblocking(true)
                .map_err(|e| format!("api.listen: {e}"))?;
            let l =
                tokio::net::UnixListener::from_std(l).map_err(|e| format!("api.listen: {e}"))?;
            let incoming = tokio_stream::wrappers::UnixListenerStream::new(l);
            info!(socket = %path.display(), "gRPC API listening");
            rt.spawn(async move {
                if let Err(e) = router
                    .serve_with_incoming_shutdown(incoming, shutdown)
                    .await
                {
                    warn!("gRPC API stopped: {e}");
                }
            });
        }
        ApiListen::Tcp(addr) => {
            let l = std::net::TcpListener::bind(addr)
                .map_err(|e| format!("api.listen: cannot bind {addr}: {e}"))?;
            l.set_nonblocking(true)
                .map_err(|e| format!("api.listen: {e}"))?;
            let l = tokio::net::TcpListener::from_std(l).map_err(|e| format!("api.listen: {e}"))?;
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(l);
            match &cfg.tls {
                Some(t) => info!(
                    %addr,
                    client_certificates = t.client_ca.is_some(),
                    "gRPC API listening on TCP with TLS"
                ),
                None => warn!(%addr, "gRPC API listening on plain TCP (api.insecure = true)"),
            }
            rt.spawn(async move {
                if let Err(e) = router
                    .serve_with_incoming_shutdown(incoming, shutdown)
                    .await
                {
                    warn!("gRPC API stopped: {e}");
                }
            });
        }
    }
    Ok(Box::new(Guard(Some(tx))))
}

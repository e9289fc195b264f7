//! The TLS configuration each listener serves new connections with, replaceable while the
//! server runs: a single process re-reads its certificate on HUP and puts the new
//! configuration in place here; each connection keeps the configuration it was accepted with.

use std::sync::{Arc, Mutex};

use rustls::ServerConfig;

/// By listener index: `Some` for a TLS listener, `None` for plaintext.
pub struct ListenerTls {
    configs: Mutex<Vec<Option<Arc<ServerConfig>>>>,
}

impl ListenerTls {
    pub fn new(configs: Vec<Option<Arc<ServerConfig>>>) -> ListenerTls {
        ListenerTls {
            configs: Mutex::new(configs),
        }
    }

    /// What listener `index` serves a connection accepted now with (`None`: plaintext). One
    /// lock and one reference count per accepted connection.
    pub fn get(&self, index: usize) -> Option<Arc<ServerConfig>> {
        self.configs.lock().unwrap().get(index).cloned().flatten()
    }

    /// Every TLS listener serves `config` from now on; whether there was any.
    pub fn replace(&self, config: Arc<ServerConfig>) -> bool {
        let mut configs = self.configs.lock().unwrap();
        let mut any = false;
        for slot in configs.iter_mut().filter(|c| c.is_some()) {
            *slot = Some(Arc::clone(&config));
            any = true;
        }
        any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::tls::config::tests::{settings, NOW};
    use crate::io::tls::load;

    #[test]
    fn replace_changes_the_tls_listeners_only() {
        let first = load(&settings(), NOW).unwrap().server;
        let second = load(&settings(), NOW).unwrap().server;
        let tls = ListenerTls::new(vec![Some(Arc::clone(&first)), None]);
        assert!(Arc::ptr_eq(&tls.get(0).unwrap(), &first));
        assert!(tls.get(1).is_none() && tls.get(2).is_none());
        assert!(tls.replace(Arc::clone(&second)));
        assert!(Arc::ptr_eq(&tls.get(0).unwrap(), &second));
        assert!(tls.get(1).is_none());
        // Plaintext only: nothing to replace.
        assert!(!ListenerTls::new(vec![None]).replace(second));
    }
}


use builtin;
use str;

set edit:completion:arg-completer[kapi] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'kapi'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'kapi'= {
            cand --log-format 'Log line format on stderr'
            cand -v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand --v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand serve 'Run a Kubernetes-compatible control-plane API server'
            cand leases 'Show apiserver identity leases (who is alive) and, with --all, the other kube-system leases'
            cand candidates 'Show LeaseCandidates joined with their Lease (who is elected, who is preferred)'
            cand hooks 'Show the post-start hooks of an apiserver and why the failing ones fail'
            cand health 'Show the health checks of an apiserver; --wait polls until healthy'
            cand top 'Show request rates, latencies and in-flight requests from /metrics, refreshing like top'
            cand completions 'Print a shell completion script'
            cand man 'Write man pages (one per subcommand) into a directory'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'kapi;serve'= {
            cand --bind-address 'IP address to listen on'
            cand --secure-port 'HTTPS port; 0 picks a free port (the admin kubeconfig records the real one)'
            cand --advertise-address 'IP announced to the cluster (identity lease, serving certificate SAN)'
            cand --data-dir 'Directory for the embedded store, generated PKI and admin.kubeconfig'
            cand --cert-dir 'Directory of the generated CA and serving certificate [default: <data-dir>/pki]'
            cand --tls-cert-file 'Serving certificate (PEM, leaf first); without it kapi generates one in --cert-dir. Reloaded when it or its key changes (new connections get the new pair)'
            cand --tls-private-key-file 'Private key of --tls-cert-file (PEM)'
            cand --http2-max-streams-per-connection 'HTTP/2 concurrent streams per connection (0 = 100)'
            cand --max-requests-inflight 'Limit of non-mutating requests in flight; over it requests get 429'
            cand --max-mutating-requests-inflight 'Limit of mutating requests in flight; over it requests get 429'
            cand --request-timeout 'Timeout of non-long-running requests; also bounds draining at shutdown'
            cand --min-request-timeout 'Watch requests time out at a random point in [x, 2x) unless timeoutSeconds is given'
            cand --livez-grace-period 'During this time after start, unfinished post-start hooks count as healthy in /livez'
            cand --client-ca-file 'CA bundle for client certificates (CN = user, O = groups), in addition to kapi''s own client CA'
            cand --token-auth-file 'Static bearer tokens, CSV lines: token,user,uid,"group1,group2"'
            cand --anonymous-auth 'Let requests without credentials in as system:anonymous (health and version endpoints only)'
            cand --service-account-issuer 'Issuer of service-account tokens (repeatable: the first one goes into new tokens, all are accepted). Default: https://<advertise address>:<port>'
            cand --service-account-signing-key-file 'PEM private key (ECDSA P-256 or RSA) that signs service-account tokens. Default: a key generated on first start as <cert-dir>/sa.key, shared by replicas that share --cert-dir'
            cand --service-account-key-file 'More PEM keys (public or private) service-account tokens are verified with (repeatable)'
            cand --api-audiences 'Audiences a token must name to reach the API (comma-separated). Default: the issuers'
            cand --service-account-max-token-expiration 'Longest lifetime a TokenRequest may ask for (at least 1h). Default: no limit'
            cand --service-account-jwks-uri 'The jwks_uri of the issuer''s discovery document. Default: https://<advertise address>:<port>/openid/v1/jwks'
            cand --requestheader-client-ca-file 'CA bundle of front proxies: a request whose client certificate it signed (and whose CN --requestheader-allowed-names allows) is the user named by the --requestheader-* headers. Default: a front-proxy CA generated as <cert-dir>/front-proxy-ca.crt, with the client certificate <cert-dir>/front-proxy-client.crt it signs'
            cand --requestheader-allowed-names 'Client-certificate common names that may send identity headers (comma-separated; empty = any certificate the request-header CA signed). Default: front-proxy-client with the generated CA, any name with --requestheader-client-ca-file'
            cand --requestheader-username-headers 'Request headers checked in order for the user name (comma-separated; the first one with a value wins)'
            cand --requestheader-uid-headers 'Request headers checked in order for the user''s UID (comma-separated; kube-apiserver reads none unless told, kapi reads the one kube-aggregator sends)'
            cand --requestheader-group-headers 'Request headers whose every value is a group of the user (comma-separated)'
            cand --requestheader-extra-headers-prefix 'Header-name prefixes of the user''s extra attributes (comma-separated): each header <prefix><key> adds its values to extra <key>, lower-cased then percent-decoded'
            cand --proxy-client-cert-file 'Client certificate (PEM) kapi presents when it proxies a request to an extension API server with the caller''s identity in X-Remote-* headers; signed by a CA in --requestheader-client-ca-file. Default: the generated <cert-dir>/front-proxy-client.crt'
            cand --proxy-client-key-file 'Private key of --proxy-client-cert-file (PEM)'
            cand --authorization-mode 'Authorizers asked in order, comma-separated: RBAC, AlwaysAllow, AlwaysDeny. Members of system:masters are always allowed first'
            cand --etcd-servers 'etcd v3 endpoints (http(s)://host:port, comma-separated); unset = embedded store'
            cand --etcd-prefix 'Key prefix of every object in storage'
            cand --etcd-cafile 'CA bundle to verify etcd''s serving certificate'
            cand --etcd-certfile 'Client certificate for etcd'
            cand --etcd-keyfile 'Client key for etcd'
            cand --compaction-interval 'How often old revisions are compacted (0 disables)'
            cand --watch-cache 'Serve lists and watches from an in-memory cache fed by one backend watch per resource'
            cand --etcd-healthcheck-timeout 'Timeout of the etcd health check'
            cand --etcd-count-metric-poll-period 'How often the objects of each resource are counted and the database''s size read for the metrics apiserver_storage_objects and apiserver_storage_size_bytes (0 disables)'
            cand --feature-gates 'Feature gates, e.g. CoordinatedLeaderElection=true,APIServerIdentity=false'
            cand --hostname-override 'Hostname used for the apiserver ID and the kubernetes.io/hostname label'
            cand --identity-lease-duration-seconds 'Duration of this server''s identity lease'
            cand --identity-lease-renew-interval 'How often the identity lease is renewed'
            cand --identity-lease-gc-period 'How often expired identity leases are garbage-collected'
            cand --lease-candidate-gc-period 'How often expired LeaseCandidates are garbage-collected'
            cand --coordinated-leadership-lease-duration 'Lease duration of the coordinated-leader-election controller''s own election'
            cand --coordinated-leadership-renew-deadline 'Renew deadline of that election'
            cand --coordinated-leadership-retry-period 'Retry period of that election (also the re-election period)'
            cand --peer-advertise-ip 'IP peers use to reach this server; publishes a peer endpoint (UnknownVersionInteroperabilityProxy)'
            cand --peer-advertise-port 'Port for --peer-advertise-ip [default: the secure port]'
            cand --peer-ca-file 'CA bundle (PEM) that signs the peers'' serving certificates, for the mixed-version peer proxy [default: this server''s serving CA, which replicas share through --cert-dir]'
            cand --runtime-config 'API group/versions (or resources) to turn on or off: api/all, api/ga, api/beta, api/alpha, <group>/<version> (v1 or api/v1 for core) or <group>/<version>/<resource>, each =true or =false, e.g. coordination.k8s.io/v1beta1=false. Replicas may serve different sets; with UnknownVersionInteroperabilityProxy a replica forwards requests for what it does not serve to a peer that does'
            cand --system-namespaces-period 'How often the system namespaces are checked and recreated'
            cand --debug-failing-hook 'Testing aid: make post-start hook NAME fail COUNT times before running (NAME=COUNT)'
            cand --shutdown-delay-duration 'After SIGTERM keep serving this long while /readyz fails, so load balancers drain'
            cand --audit-policy-file 'Audit policy (audit.k8s.io/v1 Policy, YAML or JSON): which requests are audited at which level. Without it, nothing is audited'
            cand --audit-log-path 'File the audit events are appended to, one per line; - means standard output. Without it, nothing is audited'
            cand --audit-log-maxage 'Days to keep rotated audit log files, by the timestamp in their names (0 = no limit)'
            cand --audit-log-maxbackup 'Rotated audit log files to keep (0 = all)'
            cand --audit-log-maxsize 'Size in megabytes at which the audit log file is rotated to <name>-<timestamp>.<ext> (0 = 100)'
            cand --audit-log-format 'Format of the audit log: json (one audit.k8s.io/v1 Event per line) or legacy (a one-line text summary per event)'
            cand --audit-log-mode 'blocking: a request waits until its events are written (a failed write is counted in apiserver_audit_error_total and the event''s summary logged to stderr); blocking-strict: as blocking, but a request whose first event cannot be written fails with 500; batch: events are queued and written in the background, and dropped (and counted) when the queue is full'
            cand --audit-log-batch-buffer-size 'Events the batch mode''s queue holds before it drops new ones'
            cand --tracing-config-file 'Request tracing (apiserver.config.k8s.io TracingConfiguration, YAML or JSON: endpoint, the host:port of an OpenTelemetry collector''s OTLP gRPC receiver, default localhost:4317; samplingRatePerMillion, default 0). Spans of the handler chain, storage and webhooks are sent there; a request with a sampled W3C traceparent from system:masters or system:monitoring is traced as part of that trace. Without it, nothing is traced'
            cand --log-format 'Log line format on stderr'
            cand --disable-http2-serving 'Serve HTTP/1.1 only (no h2 in ALPN)'
            cand -v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand --v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kapi;leases'= {
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use (default: the current context)'
            cand --request-timeout 'How long to wait for each request before giving up (e.g. 5s, 1m)'
            cand -o 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name'
            cand --output 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name'
            cand --color 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never'
            cand -l 'Label selector to filter leases (e.g. kubernetes.io/hostname=node-1)'
            cand --selector 'Label selector to filter leases (e.g. kubernetes.io/hostname=node-1)'
            cand --component 'Only identity leases of this component (value of label apiserver.kubernetes.io/identity)'
            cand --log-format 'Log line format on stderr'
            cand --no-headers 'Leave out the header line of tables'
            cand --all 'Also list the other Leases of kube-system (leader-election locks), with a TYPE column'
            cand -w 'After listing, keep watching and print a row whenever a lease changes'
            cand --watch 'After listing, keep watching and print a row whenever a lease changes'
            cand --fail-on-expired 'Exit 1 when any listed lease is expired'
            cand -v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand --v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kapi;candidates'= {
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use (default: the current context)'
            cand --request-timeout 'How long to wait for each request before giving up (e.g. 5s, 1m)'
            cand -o 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name'
            cand --output 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name'
            cand --color 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never'
            cand -n 'Only candidates in this namespace'
            cand --namespace 'Only candidates in this namespace'
            cand --lease 'Only candidates for this Lease name'
            cand --log-format 'Log line format on stderr'
            cand --no-headers 'Leave out the header line of tables'
            cand -A 'Candidates in all namespaces (the default)'
            cand --all-namespaces 'Candidates in all namespaces (the default)'
            cand -v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand --v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kapi;hooks'= {
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use (default: the current context)'
            cand --request-timeout 'How long to wait for each request before giving up (e.g. 5s, 1m)'
            cand -o 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name'
            cand --output 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name'
            cand --color 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never'
            cand --log-format 'Log line format on stderr'
            cand --no-headers 'Leave out the header line of tables'
            cand --failing 'Show only the hooks that are not ok'
            cand --all-apiservers 'Reach every apiserver through the peer addresses published in identity leases'
            cand -v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand --v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kapi;health'= {
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use (default: the current context)'
            cand --request-timeout 'How long to wait for each request before giving up (e.g. 5s, 1m)'
            cand -o 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name'
            cand --output 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name'
            cand --color 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never'
            cand --exclude 'Skip a check by its exact name (repeatable; sent as ?exclude=)'
            cand --timeout 'How long --wait polls (e.g. 60s, 2m)'
            cand --log-format 'Log line format on stderr'
            cand --no-headers 'Leave out the header line of tables'
            cand --wait 'Poll until healthy (exit 0) or until --timeout passes (exit 1, or 3 if never reached)'
            cand -q 'Print nothing; only set the exit code'
            cand --quiet 'Print nothing; only set the exit code'
            cand --all-apiservers 'Reach every apiserver through the peer addresses published in identity leases'
            cand -v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand --v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kapi;top'= {
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use (default: the current context)'
            cand --request-timeout 'How long to wait for each request before giving up (e.g. 5s, 1m)'
            cand -o 'Output format: table, wide (with 4XX/S and P90), json, yaml (one document per sample)'
            cand --output 'Output format: table, wide (with 4XX/S and P90), json, yaml (one document per sample)'
            cand --color 'Colour error rates: auto (only on a terminal, and not when NO_COLOR is set), always, never'
            cand --interval 'Time between two reads of /metrics: the window every rate is computed over (e.g. 2s, 1m)'
            cand --count 'Stop after this many samples (default: until Ctrl-C)'
            cand --sort 'Row order: rate (requests/s), p99 (latency) or errors (5xx/s), highest first'
            cand --limit 'Show at most N rows per apiserver (default: all; on a terminal, as many as fit)'
            cand --log-format 'Log line format on stderr'
            cand --no-headers 'Leave out the header lines of the tables'
            cand --once 'Print one sample and exit (the same as --count 1)'
            cand --all-apiservers 'Reach every apiserver through the peer addresses published in identity leases'
            cand -v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand --v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kapi;completions'= {
            cand --log-format 'Log line format on stderr'
            cand -v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand --v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kapi;man'= {
            cand --log-format 'Log line format on stderr'
            cand -v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand --v 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kapi;help'= {
            cand serve 'Run a Kubernetes-compatible control-plane API server'
            cand leases 'Show apiserver identity leases (who is alive) and, with --all, the other kube-system leases'
            cand candidates 'Show LeaseCandidates joined with their Lease (who is elected, who is preferred)'
            cand hooks 'Show the post-start hooks of an apiserver and why the failing ones fail'
            cand health 'Show the health checks of an apiserver; --wait polls until healthy'
            cand top 'Show request rates, latencies and in-flight requests from /metrics, refreshing like top'
            cand completions 'Print a shell completion script'
            cand man 'Write man pages (one per subcommand) into a directory'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'kapi;help;serve'= {
        }
        &'kapi;help;leases'= {
        }
        &'kapi;help;candidates'= {
        }
        &'kapi;help;hooks'= {
        }
        &'kapi;help;health'= {
        }
        &'kapi;help;top'= {
        }
        &'kapi;help;completions'= {
        }
        &'kapi;help;man'= {
        }
        &'kapi;help;help'= {
        }
    ]
    $completions[$command]
}

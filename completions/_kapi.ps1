
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'kapi' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'kapi'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'kapi' {
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log line format on stderr')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('--v', '--v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Run a Kubernetes-compatible control-plane API server')
            [CompletionResult]::new('leases', 'leases', [CompletionResultType]::ParameterValue, 'Show apiserver identity leases (who is alive) and, with --all, the other kube-system leases')
            [CompletionResult]::new('candidates', 'candidates', [CompletionResultType]::ParameterValue, 'Show LeaseCandidates joined with their Lease (who is elected, who is preferred)')
            [CompletionResult]::new('hooks', 'hooks', [CompletionResultType]::ParameterValue, 'Show the post-start hooks of an apiserver and why the failing ones fail')
            [CompletionResult]::new('health', 'health', [CompletionResultType]::ParameterValue, 'Show the health checks of an apiserver; --wait polls until healthy')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'Show request rates, latencies and in-flight requests from /metrics, refreshing like top')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Write man pages (one per subcommand) into a directory')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'kapi;serve' {
            [CompletionResult]::new('--bind-address', '--bind-address', [CompletionResultType]::ParameterName, 'IP address to listen on')
            [CompletionResult]::new('--secure-port', '--secure-port', [CompletionResultType]::ParameterName, 'HTTPS port; 0 picks a free port (the admin kubeconfig records the real one)')
            [CompletionResult]::new('--advertise-address', '--advertise-address', [CompletionResultType]::ParameterName, 'IP announced to the cluster (identity lease, serving certificate SAN)')
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the embedded store, generated PKI and admin.kubeconfig')
            [CompletionResult]::new('--cert-dir', '--cert-dir', [CompletionResultType]::ParameterName, 'Directory of the generated CA and serving certificate [default: <data-dir>/pki]')
            [CompletionResult]::new('--tls-cert-file', '--tls-cert-file', [CompletionResultType]::ParameterName, 'Serving certificate (PEM, leaf first); without it kapi generates one in --cert-dir. Reloaded when it or its key changes (new connections get the new pair)')
            [CompletionResult]::new('--tls-private-key-file', '--tls-private-key-file', [CompletionResultType]::ParameterName, 'Private key of --tls-cert-file (PEM)')
            [CompletionResult]::new('--http2-max-streams-per-connection', '--http2-max-streams-per-connection', [CompletionResultType]::ParameterName, 'HTTP/2 concurrent streams per connection (0 = 100)')
            [CompletionResult]::new('--max-requests-inflight', '--max-requests-inflight', [CompletionResultType]::ParameterName, 'Limit of non-mutating requests in flight; over it requests get 429')
            [CompletionResult]::new('--max-mutating-requests-inflight', '--max-mutating-requests-inflight', [CompletionResultType]::ParameterName, 'Limit of mutating requests in flight; over it requests get 429')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'Timeout of non-long-running requests; also bounds draining at shutdown')
            [CompletionResult]::new('--min-request-timeout', '--min-request-timeout', [CompletionResultType]::ParameterName, 'Watch requests time out at a random point in [x, 2x) unless timeoutSeconds is given')
            [CompletionResult]::new('--livez-grace-period', '--livez-grace-period', [CompletionResultType]::ParameterName, 'During this time after start, unfinished post-start hooks count as healthy in /livez')
            [CompletionResult]::new('--client-ca-file', '--client-ca-file', [CompletionResultType]::ParameterName, 'CA bundle for client certificates (CN = user, O = groups), in addition to kapi''s own client CA')
            [CompletionResult]::new('--token-auth-file', '--token-auth-file', [CompletionResultType]::ParameterName, 'Static bearer tokens, CSV lines: token,user,uid,"group1,group2"')
            [CompletionResult]::new('--anonymous-auth', '--anonymous-auth', [CompletionResultType]::ParameterName, 'Let requests without credentials in as system:anonymous (health and version endpoints only)')
            [CompletionResult]::new('--service-account-issuer', '--service-account-issuer', [CompletionResultType]::ParameterName, 'Issuer of service-account tokens (repeatable: the first one goes into new tokens, all are accepted). Default: https://<advertise address>:<port>')
            [CompletionResult]::new('--service-account-signing-key-file', '--service-account-signing-key-file', [CompletionResultType]::ParameterName, 'PEM private key (ECDSA P-256 or RSA) that signs service-account tokens. Default: a key generated on first start as <cert-dir>/sa.key, shared by replicas that share --cert-dir')
            [CompletionResult]::new('--service-account-key-file', '--service-account-key-file', [CompletionResultType]::ParameterName, 'More PEM keys (public or private) service-account tokens are verified with (repeatable)')
            [CompletionResult]::new('--api-audiences', '--api-audiences', [CompletionResultType]::ParameterName, 'Audiences a token must name to reach the API (comma-separated). Default: the issuers')
            [CompletionResult]::new('--service-account-max-token-expiration', '--service-account-max-token-expiration', [CompletionResultType]::ParameterName, 'Longest lifetime a TokenRequest may ask for (at least 1h). Default: no limit')
            [CompletionResult]::new('--service-account-jwks-uri', '--service-account-jwks-uri', [CompletionResultType]::ParameterName, 'The jwks_uri of the issuer''s discovery document. Default: https://<advertise address>:<port>/openid/v1/jwks')
            [CompletionResult]::new('--requestheader-client-ca-file', '--requestheader-client-ca-file', [CompletionResultType]::ParameterName, 'CA bundle of front proxies: a request whose client certificate it signed (and whose CN --requestheader-allowed-names allows) is the user named by the --requestheader-* headers. Default: a front-proxy CA generated as <cert-dir>/front-proxy-ca.crt, with the client certificate <cert-dir>/front-proxy-client.crt it signs')
            [CompletionResult]::new('--requestheader-allowed-names', '--requestheader-allowed-names', [CompletionResultType]::ParameterName, 'Client-certificate common names that may send identity headers (comma-separated; empty = any certificate the request-header CA signed). Default: front-proxy-client with the generated CA, any name with --requestheader-client-ca-file')
            [CompletionResult]::new('--requestheader-username-headers', '--requestheader-username-headers', [CompletionResultType]::ParameterName, 'Request headers checked in order for the user name (comma-separated; the first one with a value wins)')
            [CompletionResult]::new('--requestheader-uid-headers', '--requestheader-uid-headers', [CompletionResultType]::ParameterName, 'Request headers checked in order for the user''s UID (comma-separated; kube-apiserver reads none unless told, kapi reads the one kube-aggregator sends)')
            [CompletionResult]::new('--requestheader-group-headers', '--requestheader-group-headers', [CompletionResultType]::ParameterName, 'Request headers whose every value is a group of the user (comma-separated)')
            [CompletionResult]::new('--requestheader-extra-headers-prefix', '--requestheader-extra-headers-prefix', [CompletionResultType]::ParameterName, 'Header-name prefixes of the user''s extra attributes (comma-separated): each header <prefix><key> adds its values to extra <key>, lower-cased then percent-decoded')
            [CompletionResult]::new('--proxy-client-cert-file', '--proxy-client-cert-file', [CompletionResultType]::ParameterName, 'Client certificate (PEM) kapi presents when it proxies a request to an extension API server with the caller''s identity in X-Remote-* headers; signed by a CA in --requestheader-client-ca-file. Default: the generated <cert-dir>/front-proxy-client.crt')
            [CompletionResult]::new('--proxy-client-key-file', '--proxy-client-key-file', [CompletionResultType]::ParameterName, 'Private key of --proxy-client-cert-file (PEM)')
            [CompletionResult]::new('--authorization-mode', '--authorization-mode', [CompletionResultType]::ParameterName, 'Authorizers asked in order, comma-separated: RBAC, AlwaysAllow, AlwaysDeny. Members of system:masters are always allowed first')
            [CompletionResult]::new('--etcd-servers', '--etcd-servers', [CompletionResultType]::ParameterName, 'etcd v3 endpoints (http(s)://host:port, comma-separated); unset = embedded store')
            [CompletionResult]::new('--etcd-prefix', '--etcd-prefix', [CompletionResultType]::ParameterName, 'Key prefix of every object in storage')
            [CompletionResult]::new('--etcd-cafile', '--etcd-cafile', [CompletionResultType]::ParameterName, 'CA bundle to verify etcd''s serving certificate')
            [CompletionResult]::new('--etcd-certfile', '--etcd-certfile', [CompletionResultType]::ParameterName, 'Client certificate for etcd')
            [CompletionResult]::new('--etcd-keyfile', '--etcd-keyfile', [CompletionResultType]::ParameterName, 'Client key for etcd')
            [CompletionResult]::new('--compaction-interval', '--compaction-interval', [CompletionResultType]::ParameterName, 'How often old revisions are compacted (0 disables)')
            [CompletionResult]::new('--watch-cache', '--watch-cache', [CompletionResultType]::ParameterName, 'Serve lists and watches from an in-memory cache fed by one backend watch per resource')
            [CompletionResult]::new('--etcd-healthcheck-timeout', '--etcd-healthcheck-timeout', [CompletionResultType]::ParameterName, 'Timeout of the etcd health check')
            [CompletionResult]::new('--etcd-count-metric-poll-period', '--etcd-count-metric-poll-period', [CompletionResultType]::ParameterName, 'How often the objects of each resource are counted and the database''s size read for the metrics apiserver_storage_objects and apiserver_storage_size_bytes (0 disables)')
            [CompletionResult]::new('--feature-gates', '--feature-gates', [CompletionResultType]::ParameterName, 'Feature gates, e.g. CoordinatedLeaderElection=true,APIServerIdentity=false')
            [CompletionResult]::new('--hostname-override', '--hostname-override', [CompletionResultType]::ParameterName, 'Hostname used for the apiserver ID and the kubernetes.io/hostname label')
            [CompletionResult]::new('--identity-lease-duration-seconds', '--identity-lease-duration-seconds', [CompletionResultType]::ParameterName, 'Duration of this server''s identity lease')
            [CompletionResult]::new('--identity-lease-renew-interval', '--identity-lease-renew-interval', [CompletionResultType]::ParameterName, 'How often the identity lease is renewed')
            [CompletionResult]::new('--identity-lease-gc-period', '--identity-lease-gc-period', [CompletionResultType]::ParameterName, 'How often expired identity leases are garbage-collected')
            [CompletionResult]::new('--lease-candidate-gc-period', '--lease-candidate-gc-period', [CompletionResultType]::ParameterName, 'How often expired LeaseCandidates are garbage-collected')
            [CompletionResult]::new('--coordinated-leadership-lease-duration', '--coordinated-leadership-lease-duration', [CompletionResultType]::ParameterName, 'Lease duration of the coordinated-leader-election controller''s own election')
            [CompletionResult]::new('--coordinated-leadership-renew-deadline', '--coordinated-leadership-renew-deadline', [CompletionResultType]::ParameterName, 'Renew deadline of that election')
            [CompletionResult]::new('--coordinated-leadership-retry-period', '--coordinated-leadership-retry-period', [CompletionResultType]::ParameterName, 'Retry period of that election (also the re-election period)')
            [CompletionResult]::new('--peer-advertise-ip', '--peer-advertise-ip', [CompletionResultType]::ParameterName, 'IP peers use to reach this server; publishes a peer endpoint (UnknownVersionInteroperabilityProxy)')
            [CompletionResult]::new('--peer-advertise-port', '--peer-advertise-port', [CompletionResultType]::ParameterName, 'Port for --peer-advertise-ip [default: the secure port]')
            [CompletionResult]::new('--peer-ca-file', '--peer-ca-file', [CompletionResultType]::ParameterName, 'CA bundle (PEM) that signs the peers'' serving certificates, for the mixed-version peer proxy [default: this server''s serving CA, which replicas share through --cert-dir]')
            [CompletionResult]::new('--runtime-config', '--runtime-config', [CompletionResultType]::ParameterName, 'API group/versions (or resources) to turn on or off: api/all, api/ga, api/beta, api/alpha, <group>/<version> (v1 or api/v1 for core) or <group>/<version>/<resource>, each =true or =false, e.g. coordination.k8s.io/v1beta1=false. Replicas may serve different sets; with UnknownVersionInteroperabilityProxy a replica forwards requests for what it does not serve to a peer that does')
            [CompletionResult]::new('--system-namespaces-period', '--system-namespaces-period', [CompletionResultType]::ParameterName, 'How often the system namespaces are checked and recreated')
            [CompletionResult]::new('--debug-failing-hook', '--debug-failing-hook', [CompletionResultType]::ParameterName, 'Testing aid: make post-start hook NAME fail COUNT times before running (NAME=COUNT)')
            [CompletionResult]::new('--shutdown-delay-duration', '--shutdown-delay-duration', [CompletionResultType]::ParameterName, 'After SIGTERM keep serving this long while /readyz fails, so load balancers drain')
            [CompletionResult]::new('--audit-policy-file', '--audit-policy-file', [CompletionResultType]::ParameterName, 'Audit policy (audit.k8s.io/v1 Policy, YAML or JSON): which requests are audited at which level. Without it, nothing is audited')
            [CompletionResult]::new('--audit-log-path', '--audit-log-path', [CompletionResultType]::ParameterName, 'File the audit events are appended to, one per line; - means standard output. Without it, nothing is audited')
            [CompletionResult]::new('--audit-log-maxage', '--audit-log-maxage', [CompletionResultType]::ParameterName, 'Days to keep rotated audit log files, by the timestamp in their names (0 = no limit)')
            [CompletionResult]::new('--audit-log-maxbackup', '--audit-log-maxbackup', [CompletionResultType]::ParameterName, 'Rotated audit log files to keep (0 = all)')
            [CompletionResult]::new('--audit-log-maxsize', '--audit-log-maxsize', [CompletionResultType]::ParameterName, 'Size in megabytes at which the audit log file is rotated to <name>-<timestamp>.<ext> (0 = 100)')
            [CompletionResult]::new('--audit-log-format', '--audit-log-format', [CompletionResultType]::ParameterName, 'Format of the audit log: json (one audit.k8s.io/v1 Event per line) or legacy (a one-line text summary per event)')
            [CompletionResult]::new('--audit-log-mode', '--audit-log-mode', [CompletionResultType]::ParameterName, 'blocking: a request waits until its events are written (a failed write is counted in apiserver_audit_error_total and the event''s summary logged to stderr); blocking-strict: as blocking, but a request whose first event cannot be written fails with 500; batch: events are queued and written in the background, and dropped (and counted) when the queue is full')
            [CompletionResult]::new('--audit-log-batch-buffer-size', '--audit-log-batch-buffer-size', [CompletionResultType]::ParameterName, 'Events the batch mode''s queue holds before it drops new ones')
            [CompletionResult]::new('--tracing-config-file', '--tracing-config-file', [CompletionResultType]::ParameterName, 'Request tracing (apiserver.config.k8s.io TracingConfiguration, YAML or JSON: endpoint, the host:port of an OpenTelemetry collector''s OTLP gRPC receiver, default localhost:4317; samplingRatePerMillion, default 0). Spans of the handler chain, storage and webhooks are sent there; a request with a sampled W3C traceparent from system:masters or system:monitoring is traced as part of that trace. Without it, nothing is traced')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log line format on stderr')
            [CompletionResult]::new('--disable-http2-serving', '--disable-http2-serving', [CompletionResultType]::ParameterName, 'Serve HTTP/1.1 only (no h2 in ALPN)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('--v', '--v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kapi;leases' {
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'How long to wait for each request before giving up (e.g. 5s, 1m)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Label selector to filter leases (e.g. kubernetes.io/hostname=node-1)')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Label selector to filter leases (e.g. kubernetes.io/hostname=node-1)')
            [CompletionResult]::new('--component', '--component', [CompletionResultType]::ParameterName, 'Only identity leases of this component (value of label apiserver.kubernetes.io/identity)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log line format on stderr')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Also list the other Leases of kube-system (leader-election locks), with a TYPE column')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'After listing, keep watching and print a row whenever a lease changes')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'After listing, keep watching and print a row whenever a lease changes')
            [CompletionResult]::new('--fail-on-expired', '--fail-on-expired', [CompletionResultType]::ParameterName, 'Exit 1 when any listed lease is expired')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('--v', '--v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kapi;candidates' {
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'How long to wait for each request before giving up (e.g. 5s, 1m)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Only candidates in this namespace')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Only candidates in this namespace')
            [CompletionResult]::new('--lease', '--lease', [CompletionResultType]::ParameterName, 'Only candidates for this Lease name')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log line format on stderr')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'Candidates in all namespaces (the default)')
            [CompletionResult]::new('--all-namespaces', '--all-namespaces', [CompletionResultType]::ParameterName, 'Candidates in all namespaces (the default)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('--v', '--v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kapi;hooks' {
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'How long to wait for each request before giving up (e.g. 5s, 1m)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log line format on stderr')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables')
            [CompletionResult]::new('--failing', '--failing', [CompletionResultType]::ParameterName, 'Show only the hooks that are not ok')
            [CompletionResult]::new('--all-apiservers', '--all-apiservers', [CompletionResultType]::ParameterName, 'Reach every apiserver through the peer addresses published in identity leases')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('--v', '--v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kapi;health' {
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'How long to wait for each request before giving up (e.g. 5s, 1m)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never')
            [CompletionResult]::new('--exclude', '--exclude', [CompletionResultType]::ParameterName, 'Skip a check by its exact name (repeatable; sent as ?exclude=)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long --wait polls (e.g. 60s, 2m)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log line format on stderr')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Poll until healthy (exit 0) or until --timeout passes (exit 1, or 3 if never reached)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing; only set the exit code')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing; only set the exit code')
            [CompletionResult]::new('--all-apiservers', '--all-apiservers', [CompletionResultType]::ParameterName, 'Reach every apiserver through the peer addresses published in identity leases')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('--v', '--v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kapi;top' {
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'How long to wait for each request before giving up (e.g. 5s, 1m)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide (with 4XX/S and P90), json, yaml (one document per sample)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide (with 4XX/S and P90), json, yaml (one document per sample)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour error rates: auto (only on a terminal, and not when NO_COLOR is set), always, never')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'Time between two reads of /metrics: the window every rate is computed over (e.g. 2s, 1m)')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Stop after this many samples (default: until Ctrl-C)')
            [CompletionResult]::new('--sort', '--sort', [CompletionResultType]::ParameterName, 'Row order: rate (requests/s), p99 (latency) or errors (5xx/s), highest first')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'Show at most N rows per apiserver (default: all; on a terminal, as many as fit)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log line format on stderr')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header lines of the tables')
            [CompletionResult]::new('--once', '--once', [CompletionResultType]::ParameterName, 'Print one sample and exit (the same as --count 1)')
            [CompletionResult]::new('--all-apiservers', '--all-apiservers', [CompletionResultType]::ParameterName, 'Reach every apiserver through the peer addresses published in identity leases')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('--v', '--v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kapi;completions' {
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log line format on stderr')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('--v', '--v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kapi;man' {
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log line format on stderr')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('--v', '--v', [CompletionResultType]::ParameterName, 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kapi;help' {
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Run a Kubernetes-compatible control-plane API server')
            [CompletionResult]::new('leases', 'leases', [CompletionResultType]::ParameterValue, 'Show apiserver identity leases (who is alive) and, with --all, the other kube-system leases')
            [CompletionResult]::new('candidates', 'candidates', [CompletionResultType]::ParameterValue, 'Show LeaseCandidates joined with their Lease (who is elected, who is preferred)')
            [CompletionResult]::new('hooks', 'hooks', [CompletionResultType]::ParameterValue, 'Show the post-start hooks of an apiserver and why the failing ones fail')
            [CompletionResult]::new('health', 'health', [CompletionResultType]::ParameterValue, 'Show the health checks of an apiserver; --wait polls until healthy')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'Show request rates, latencies and in-flight requests from /metrics, refreshing like top')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Write man pages (one per subcommand) into a directory')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'kapi;help;serve' {
            break
        }
        'kapi;help;leases' {
            break
        }
        'kapi;help;candidates' {
            break
        }
        'kapi;help;hooks' {
            break
        }
        'kapi;help;health' {
            break
        }
        'kapi;help;top' {
            break
        }
        'kapi;help;completions' {
            break
        }
        'kapi;help;man' {
            break
        }
        'kapi;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}

#!/usr/bin/env python3
"""Build the IT-triage corpus shipped with ``drill.envs.triage``.

Deterministic, standard library only.  Run from the repository root::

    python tools/build_triage_corpus.py

It writes articles.json, tickets.json, incidents.json, tasks.json and
README.md into src/drill/envs/triage/data/.

The knowledge-base articles below are hand-written one by one.  Each article
also carries authoring-only fields that never reach articles.json:

* ``hosts``  - realistic hosts / resources the article's problem shows up on
* ``asks``   - how users actually report the problem (``{h}`` = host)
* ``fix``    - 2-3 sentence summary of the resolution (gold answer basis)
* ``imp``    - (severity, incident title, impact sentence) for incidents
* ``escal``  - optional (ticket text, gold answer) where the article's
               ``escalate_when`` condition is met
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "src" / "drill" / "envs" / "triage" / "data"

AREA_CODES = {
    "networking": "NET",
    "security": "SEC",
    "cloud": "CLD",
    "infrastructure": "INF",
}
_COUNTERS = {a: 0 for a in AREA_CODES}
ARTICLES: list[dict] = []


def A(area, t, sym, cause, res, esc, tags, hosts, asks, fix, imp, escal=None):
    """Register one hand-written KB article."""
    assert area in AREA_CODES, area
    assert 2 <= len(sym) <= 4, t
    assert 3 <= len(res) <= 6, t
    assert len(hosts) >= 3 and len(asks) >= 2, t
    _COUNTERS[area] += 1
    ARTICLES.append(
        {
            "id": f"KB-{AREA_CODES[area]}-{_COUNTERS[area]:04d}",
            "area": area,
            "title": t,
            "symptoms": sym,
            "cause": cause,
            "resolution": res,
            "escalate_when": esc,
            "tags": tags.split(),
            "_hosts": hosts,
            "_asks": asks,
            "_fix": fix,
            "_imp": imp,
            "_escal": escal,
        }
    )


N = "networking"
S = "security"
C = "cloud"
I = "infrastructure"

# ---------------------------------------------------------------------------
# NETWORKING
# ---------------------------------------------------------------------------

A(N, "BGP session stuck in Active/Idle after config change (remote-as mismatch or TCP/179 blocked)",
  ["`show bgp summary` lists neighbor 10.255.0.2 in state Active (or Idle) with 0 prefixes received",
   "%BGP-3-NOTIFICATION: sent to neighbor 10.255.0.2 active 2/2 (peer in wrong AS) 2 bytes FDE9",
   "%TCP-6-BADAUTH: No MD5 digest from 10.255.0.2(179) to 10.255.0.1(31874)",
   "Routes learned from the peer are missing from `show ip route bgp`"],
  "The session never reaches Established because the locally configured `remote-as` does not match the ASN in the peer's OPEN message, the MD5 password differs, or TCP/179 between the peering addresses is blocked (ACL, wrong update-source for loopback peering).",
  ["Check state and last reset reason: `show bgp summary` and `show bgp neighbors 10.255.0.2 | include BGP state|Last reset`.",
   "Read the NOTIFICATION in `show logging | include BGP|BADAUTH`: 2/2 'peer in wrong AS' = remote-as mismatch, %TCP-6-BADAUTH = MD5 password mismatch.",
   "Test TCP/179 from the configured source: `telnet 10.255.0.2 179 /source-interface Loopback0`; for loopback peering confirm `neighbor 10.255.0.2 update-source Loopback0` and, for eBGP, `ebgp-multihop 2`.",
   "Correct `neighbor 10.255.0.2 remote-as <ASN>` / `password` to the values in the peering sheet and `clear ip bgp 10.255.0.2`.",
   "Confirm the neighbor is Established and `show bgp neighbors 10.255.0.2 received-routes` (or the PfxRcd column) shows the expected prefix count."],
  "The peer is an external transit or IXP provider and the mismatch/block is on their side, or a production transit session cannot be restored within 30 minutes.",
  "bgp routing peering asn neighbor md5 network",
  ["edge-rtr-01", "edge-rtr-02", "dc1-border-01", "dc2-border-02"],
  ["BGP to the DC2 border on {h} isn't coming back after last night's maintenance. neighbor just sits in Active, 0 prefixes.",
   "{h} peering is Idle since the config push. show bgp summary attached. Did someone change the ASN?",
   "we lost routes from the other DC, traceroutes from {h} go out the default route instead. bgp looks down"],
  "On {h}, run `show bgp summary` and `show logging | include BGP|BADAUTH` to read the NOTIFICATION reason: 'peer in wrong AS' means the `neighbor ... remote-as` value is wrong and %TCP-6-BADAUTH means the MD5 password differs. Fix the neighbor statement (and update-source/ebgp-multihop for loopback peering), verify TCP/179 with `telnet <peer> 179 /source-interface Loopback0`, clear the session and confirm it is Established with prefixes received.",
  ("SEV2", "Loss of inter-DC BGP peering on {h}", "Inter-DC traffic fell back to the VPN backup path; replication between DC1 and DC2 lagged by up to 14 minutes."),
  ("Our transit session with the ISP on {h} has been Active since 02:00. nothing changed on our side and their NOC isn't answering. this is our main internet link!!",
   "Confirm on {h} with `show bgp summary` and `show logging | include BGP` whether the NOTIFICATION or TCP/179 refusal points at the provider side. Because this is an external transit peer with production impact and no local change, escalate to Network Engineering on-call so they can engage the provider NOC with the peering details."))

A(N, "BGP session flapping with 'hold time expired'",
  ["%BGP-5-ADJCHANGE: neighbor 172.16.10.1 Down BGP Notification sent",
   "%BGP-3-NOTIFICATION: sent to neighbor 172.16.10.1 4/0 (hold time expired) 0 bytes",
   "`show bgp summary` Up/Down column keeps resetting to a few minutes; prefixes withdrawn and re-learned"],
  "Keepalives are not arriving within the negotiated hold time (default 180 s, often tuned to 9-30 s), usually because of packet loss or congestion on the link, CPU starvation on one router, or an MTU problem that drops full-size UPDATE packets after the session comes up.",
  ["Confirm the reason with `show bgp neighbors 172.16.10.1 | include hold time|Last reset|keepalive`.",
   "Check the underlying link for drops and errors: `show interfaces Te0/0/1 | include drops|errors|rate` and `ping 172.16.10.1 repeat 1000 size 1500 df-bit`.",
   "If small pings pass but 1500-byte DF pings fail, fix the MTU mismatch or set `ip tcp path-mtu-discovery`; if drops occur under load, apply QoS to prioritise CS6 control traffic.",
   "Check router CPU with `show processes cpu sorted | exclude 0.00` for BGP Router/BGP I/O spikes during the flaps.",
   "If the link is lossy, enable BFD for fast, clean failover (`neighbor 172.16.10.1 fall-over bfd`) rather than lowering timers further."],
  "The flaps are caused by loss on a carrier circuit, the router CPU is pegged by something other than BGP, or flapping continues after the MTU/QoS fix.",
  "bgp flapping hold-timer keepalive mtu bfd routing network",
  ["dc1-border-01", "branch-rtr-lon", "edge-rtr-02", "core-rtr-03"],
  ["BGP on {h} keeps bouncing every 10-15 mins, logs say hold time expired. users notice short blips",
   "the monitoring shows the peering on {h} going down/up all morning. is the ISP having issues?? we get 'hold time expired'",
   "random 30 second outages at the London office. network guys said bgp on {h} is flapping"],
  "Check `show bgp neighbors <peer> | include hold time|Last reset` on {h} and look for drops/errors on the peering interface and 1500-byte DF ping failures, which point at loss or an MTU mismatch killing keepalives/UPDATEs. Fix the MTU or congestion (QoS for CS6 control traffic), check `show processes cpu sorted` for CPU starvation, and enable BFD instead of lowering timers further.",
  ("SEV3", "Repeated BGP flaps on {h}", "Each flap caused 20-40 s of packet loss for the branch; VoIP calls dropped 11 times over the morning."),
  ("bgp on {h} flapping AGAIN. we already fixed the mtu last week, interface counters show CRC errors on the carrier circuit. ISP says all fine on their end",
   "The CRC errors on the carrier-facing interface of {h} indicate a physical/circuit problem rather than BGP configuration, and the MTU fix has already been applied. Escalate to Network Engineering on-call to open a fault with the carrier, sharing interface counters and flap timestamps."))

A(N, "BGP maximum-prefix limit exceeded, session shut down",
  ["%BGP-4-MAXPFX: No. of prefix received from 203.0.113.9 (afi 0) reaches 24000, max 30000",
   "%BGP-3-MAXPFXEXCEED: No. of prefix received from 203.0.113.9 (afi 0): 30001 exceed limit 30000",
   "`show bgp summary` shows the neighbor in Idle (PfxCt) and it does not re-establish"],
  "The peer sent more prefixes than the `maximum-prefix` limit configured on the neighbor, either because of legitimate table growth or a route leak from the peer, and the router tore the session down and keeps it Idle until cleared.",
  ["Confirm with `show bgp neighbors 203.0.113.9 | include prefix|Idle` and `show logging | include MAXPFX`.",
   "Find out whether the growth is legitimate: compare the last known count in monitoring and ask the peer (or check their looking glass) whether they leaked a full table.",
   "If legitimate, raise the limit with headroom and a warning threshold, e.g. `neighbor 203.0.113.9 maximum-prefix 40000 80 restart 15`.",
   "Bring the session back with `clear ip bgp 203.0.113.9` and watch PfxRcd in `show bgp summary`.",
   "Never switch to `warning-only` on an external peer permanently; a leak would then be installed into the RIB."],
  "The peer appears to be leaking routes (count far above its normal table size), or the limit change needs approval for an external peer.",
  "bgp max-prefix route-leak peering routing network",
  ["edge-rtr-01", "ix-rtr-ams-01", "edge-rtr-02"],
  ["peering on {h} went down and won't come back, log says MAXPFXEXCEED. can we just bump the limit?",
   "{h} dropped our IX session with 203.0.113.9. it says Idle (PfxCt) what does that mean"],
  "The session on {h} was shut down by the `maximum-prefix` limit (Idle/PfxCt, %BGP-3-MAXPFXEXCEED). Check whether the prefix growth is legitimate; if so raise the limit with headroom (e.g. `neighbor X maximum-prefix 40000 80 restart 15`) and `clear ip bgp X`, then watch PfxRcd.",
  ("SEV3", "IX peering shut down by max-prefix on {h}", "Traffic to ~1,200 IX-reachable networks moved to paid transit; no customer-visible outage but transit costs spiked."),
  ("{h} IX session hit max prefix. normally they send ~900 routes, now it's trying to send 31k. should I just raise the limit to 50k?",
   "A jump from ~900 to 31,000 prefixes is almost certainly a route leak by the peer, so do not raise the limit or set warning-only. Keep the session down and escalate to Network Engineering on-call to contact the peer's NOC about the leak."))

A(N, "Prefix not advertised to BGP peer",
  ["`show ip bgp neighbors 10.255.0.2 advertised-routes` does not list 10.60.0.0/16",
   "The remote side reports the prefix missing from their table; traffic for the new subnet is dropped upstream",
   "`show ip bgp 10.60.0.0/16` returns '% Network not in table'"],
  "BGP only advertises a `network` statement if an exact match (prefix and mask) exists in the routing table, and outbound route-maps or prefix-lists can filter it; a new subnet is often missing the network statement, has a mismatched mask, or is not matched by the outbound prefix-list.",
  ["Check the BGP table: `show ip bgp 10.60.0.0/16`; if 'Network not in table', verify an exact RIB match with `show ip route 10.60.0.0 255.255.0.0`.",
   "If there is no exact route, add the network statement with the right mask and, for an aggregate, a pull-up route: `ip route 10.60.0.0 255.255.0.0 Null0 254`.",
   "Check the outbound policy: `show run | section router bgp` for `route-map ... out` / `prefix-list ... out`, and `show ip prefix-list PL-OUT` to confirm the prefix is permitted.",
   "Apply the change and refresh the peer without a reset: `clear ip bgp 10.255.0.2 soft out`.",
   "Verify with `show ip bgp neighbors 10.255.0.2 advertised-routes | include 10.60.`"],
  "The prefix must be announced to an external provider that needs an updated IRR/RPKI object or LOA, which only Network Engineering can file.",
  "bgp advertise prefix-list route-map routing network",
  ["dc1-border-01", "edge-rtr-01", "core-rtr-03"],
  ["we created the new 10.60.0.0/16 subnet for the k8s cluster but DC2 can't reach it. {h} not advertising it?",
   "new office range isn't reachable from the other site. I added it on {h} yesterday, maybe bgp doesn't pick it up"],
  "Check `show ip bgp <prefix>` on {h}; BGP only advertises a `network` statement with an exact RIB match, so add the correct mask (with a Null0 pull-up route for aggregates) and make sure the outbound prefix-list/route-map permits it. Refresh with `clear ip bgp <peer> soft out` and confirm in `show ip bgp neighbors <peer> advertised-routes`.",
  ("SEV3", "New subnet unreachable across DCs via {h}", "A newly deployed Kubernetes cluster was unreachable from DC2 for 3 hours, delaying a planned migration."))

A(N, "Internal hostname returns NXDOMAIN",
  ["`dig grafana.corp.example.com` returns status: NXDOMAIN",
   "Browser: DNS_PROBE_FINISHED_NXDOMAIN; curl: (6) Could not resolve host: grafana.corp.example.com",
   "Name resolves on the office network but not from VPN or from a cloud VPC (or the other way round)"],
  "The record does not exist in the zone the client is querying: it was never created, was created in the wrong zone/view (split-horizon internal vs external), or the client is using a resolver that does not forward corp.example.com to the internal DNS servers.",
  ["Query the authoritative internal servers directly: `dig @10.0.0.53 grafana.corp.example.com A +norec`; if NXDOMAIN there, the record is missing.",
   "Check which resolver the client actually uses: `resolvectl status` (Linux), `scutil --dns` (macOS) or `Get-DnsClientServerAddress` (Windows).",
   "For split-horizon problems compare views: `dig @10.0.0.53 name` vs `dig @1.1.1.1 name`; internal-only names must never be expected to resolve publicly.",
   "Create the missing record in the correct zone (IPAM/DNS change request or `nsupdate` for dynamic zones) and confirm with `dig +short @10.0.0.53 grafana.corp.example.com`.",
   "If the client resolver lacks conditional forwarding for corp.example.com (e.g. a VPC resolver), add a forwarding rule (Route 53 Resolver outbound rule or BIND `zone \"corp.example.com\" { type forward; forwarders { 10.0.0.53; }; };`)."],
  "The zone is managed by a third party or the record must be created in the public zone, which requires a DNS change approval.",
  "dns nxdomain record resolver split-horizon network",
  ["grafana.corp.example.com", "jira.corp.example.com", "build-01.corp.example.com", "wiki.corp.example.com"],
  ["{h} doesn't work - 'server not found'. was fine last week. is the site down?",
   "can't resolve {h} from my laptop, colleague says it works for him. DNS_PROBE_FINISHED_NXDOMAIN",
   "curl: (6) Could not resolve host: {h} from the ci runners in aws. works from office"],
  "Query the internal authoritative server directly (`dig @10.0.0.53 {h} +norec`); NXDOMAIN there means the record is missing and must be created in the correct zone/view, otherwise the client is using a resolver that does not forward corp.example.com. Check the client's resolver (`resolvectl status`, `scutil --dns`), add conditional forwarding (e.g. a Route 53 Resolver outbound rule) where missing, and verify with `dig +short`.",
  ("SEV3", "Internal name {h} unresolvable from VPC resolvers", "CI pipelines in AWS failed for 2 hours because they could not reach internal build services."))

A(N, "SERVFAIL caused by DNSSEC validation failure (expired RRSIG / broken DS)",
  ["`dig example-partner.com` returns status: SERVFAIL, but `dig +cd example-partner.com` returns an answer",
   "Unbound log: 'validation failure <example-partner.com. A IN>: signature expired from 192.0.2.53'",
   "`delv example-partner.com` prints ';; resolution failed: RRSIG has expired' or 'no valid signature found'"],
  "The zone's DNSSEC chain is broken: RRSIG signatures expired because the signer stopped re-signing, or the DS record at the parent does not match the zone's current KSK after a key rollover, so validating resolvers return SERVFAIL while non-validating ones still answer.",
  ["Confirm it is DNSSEC: `dig example-partner.com +dnssec` gives SERVFAIL while `dig example-partner.com +cd` (checking disabled) succeeds.",
   "Get the exact reason with `delv @10.0.0.53 example-partner.com` and check the chain with `dig +trace +dnssec example-partner.com` or DNSViz.",
   "If the zone is ours: re-sign it (BIND `rndc sign corp.example.com` / `rndc loadkeys`) or fix the DS at the registrar to match `dig DNSKEY zone | dnssec-dsfromkey -f - zone`.",
   "If the zone belongs to a third party and access is business critical, add a temporary negative trust anchor on the resolvers (`unbound-control insecure_add example-partner.com` or BIND `rndc nta -lifetime 1d example-partner.com`) and notify the zone owner.",
   "Remove the NTA once `delv` validates again."],
  "The broken zone is our public zone (customer impact) or the registrar DS must be changed.",
  "dns dnssec servfail rrsig resolver network",
  ["example-partner.com", "pay.acme-billing.net", "api.corp-example.io"],
  ["we cannot reach {h} from the office but it works on my phone (4G). nslookup says server failed",
   "all our services calling {h} fail with SERVFAIL since this morning. probably their site is down?"],
  "This is a DNSSEC validation failure: `dig {h}` returns SERVFAIL while `dig +cd {h}` answers, and `delv` shows the expired signature or DS mismatch. If the zone is ours re-sign it or fix the DS at the registrar; if it is a third party's, add a temporary negative trust anchor on the resolvers (`rndc nta -lifetime 1d {h}` / `unbound-control insecure_add`) and notify the owner.",
  ("SEV2", "DNSSEC validation failures for {h}", "Outbound calls to a payment partner failed for 55 minutes; 1,900 card payments were queued and retried later."),
  ("our own public zone example.com is returning SERVFAIL for customers using Google DNS, delv says DS doesn't match. we rotated keys yesterday",
   "The DS at the registrar no longer matches the new KSK after yesterday's rollover, which breaks validation for customers on validating resolvers. Because it is our public zone and requires a registrar DS change, escalate to Network Engineering on-call (DNS owners) immediately to publish the correct DS or roll back the KSK."))

A(N, "Clients still resolve old IP after DNS record change (TTL caching)",
  ["`dig +short app.corp.example.com` returns the old address on some machines, new address on others",
   "Traffic still arriving at the decommissioned server hours after the cut-over",
   "`dig app.corp.example.com` answer section shows a large remaining TTL such as 86400"],
  "Resolvers and clients cache the previous record until its TTL expires; if the TTL was not lowered before the change, caches may keep the old value for up to the original TTL (often 1 hour to 1 day), and some applications (JVM, nscd) cache even longer.",
  ["Check the authoritative answer and TTL: `dig @ns1.corp.example.com app.corp.example.com` and compare with the cached `dig app.corp.example.com` TTL from an affected client.",
   "Flush caches on affected recursive resolvers: `rndc flushname app.corp.example.com` (BIND) or `unbound-control flush app.corp.example.com`.",
   "Flush client caches: `resolvectl flush-caches` (systemd-resolved), `sudo dscacheutil -flushcache; sudo killall -HUP mDNSResponder` (macOS), `ipconfig /flushdns` (Windows).",
   "Restart long-lived JVM services that cache DNS (`networkaddress.cache.ttl`) if they keep the old IP.",
   "For future migrations lower the TTL to 60-300 s at least one old-TTL period before the change."],
  "The authoritative servers themselves still serve the old record, or a third-party resolver outside our control is pinning it.",
  "dns ttl cache flush migration network",
  ["app.corp.example.com", "sso.corp.example.com", "reports.corp.example.com"],
  ["we moved {h} to the new server yesterday but half the people still land on the old one",
   "after the migration {h} still points to the old ip for me. i think the migration failed?",
   "some of our services keep connecting to the old {h} box even though DNS was updated hours ago"],
  "Compare the authoritative answer (`dig @ns1.corp.example.com {h}`) with the cached one on affected clients; the old IP is cached until the original TTL expires. Flush the resolver caches (`rndc flushname {h}` / `unbound-control flush {h}`) and clients (`ipconfig /flushdns`, `resolvectl flush-caches`), restart JVM services that cache DNS, and lower TTLs to 60-300 s before future migrations.",
  ("SEV4", "Traffic still hitting decommissioned backend for {h}", "About 30% of users reached the old server for 6 hours after cut-over and saw stale data."))

A(N, "Linux host cannot resolve names: 'Temporary failure in name resolution'",
  ["ping: google.com: Temporary failure in name resolution",
   "/etc/resolv.conf contains only 'nameserver 127.0.0.53' and queries time out",
   "apt-get: Temporary failure resolving 'archive.ubuntu.com'"],
  "systemd-resolved has no upstream DNS servers (DHCP lease lost, netplan/NetworkManager misconfiguration) or /etc/resolv.conf was replaced by a static file or broken symlink, so the stub resolver at 127.0.0.53 has nowhere to forward queries.",
  ["Check what the stub knows: `resolvectl status` — look for 'Current DNS Server' on the uplink interface.",
   "Check the symlink: `ls -l /etc/resolv.conf` should point to `../run/systemd/resolve/stub-resolv.conf`; restore with `ln -sf ../run/systemd/resolve/stub-resolv.conf /etc/resolv.conf`.",
   "Test upstream directly: `dig @10.0.0.53 archive.ubuntu.com`; if this works the problem is local configuration.",
   "Fix the interface DNS config (netplan `nameservers: addresses: [10.0.0.53, 10.0.1.53]` then `netplan apply`, or `nmcli con mod eth0 ipv4.dns \"10.0.0.53 10.0.1.53\"`) and `systemctl restart systemd-resolved`.",
   "Verify with `resolvectl query archive.ubuntu.com`."],
  "Direct queries to the corporate resolvers (10.0.0.53/10.0.1.53) also fail, indicating a resolver or network outage.",
  "dns resolv.conf systemd-resolved linux network",
  ["web-07", "jenkins-agent-03", "etl-worker-02", "bastion-01"],
  ["{h} can't reach anything by name since reboot. 'Temporary failure in name resolution'. IPs work fine",
   "apt update fails on {h} - Temporary failure resolving archive.ubuntu.com. firewall blocking?"],
  "On {h}, `resolvectl status` will show systemd-resolved has no upstream DNS server, or `/etc/resolv.conf` is no longer the stub symlink. Restore the symlink (`ln -sf ../run/systemd/resolve/stub-resolv.conf /etc/resolv.conf`), fix the nameservers in netplan/NetworkManager, restart systemd-resolved and verify with `resolvectl query`.",
  ("SEV4", "Name resolution broken on {h} after reboot", "Nightly ETL on the host failed to reach its sources; reports were 4 hours late."))

A(N, "Intermittent 5-second DNS delays inside Kubernetes pods",
  ["Application latency shows spikes of almost exactly 5 s (or 2.5 s / 10 s) on outbound calls",
   "`time nslookup api.internal` inside a pod occasionally takes 5.0 s",
   "CoreDNS logs show nothing wrong; `conntrack -S` on nodes shows rising insert_failed"],
  "Pods use `ndots:5` so each external name is tried against several search domains, and glibc sends A and AAAA queries in parallel from the same socket; a known conntrack race in the Linux kernel drops one of the UDP packets and the resolver waits for its 5 s timeout before retrying.",
  ["Confirm: `kubectl exec -it <pod> -- cat /etc/resolv.conf` (ndots:5 and search list) and on the node `conntrack -S | grep insert_failed`.",
   "Deploy NodeLocal DNSCache so pods query a node-local cache over TCP to CoreDNS, which avoids the race.",
   "As a quick mitigation set `dnsConfig.options: [{name: single-request-reopen}]` (glibc) and lower `ndots` to 2 for services that call external FQDNs, or use trailing-dot FQDNs.",
   "Scale CoreDNS if `coredns_dns_request_duration_seconds` p99 is high: `kubectl -n kube-system scale deploy coredns --replicas=4`."],
  "Delays persist after NodeLocal DNSCache and ndots tuning, or CoreDNS itself shows errors/timeouts to upstream resolvers.",
  "dns kubernetes coredns conntrack ndots latency network",
  ["checkout-api", "orders-worker", "search-gateway"],
  ["{h} pods have random 5 second pauses talking to other services. the network in the cluster is slow?",
   "p99 latency of {h} jumped, traces show 5s gaps before every outbound call. only sometimes. is the database slow?"],
  "Exact 5-second pauses are the conntrack race on parallel A/AAAA DNS lookups combined with ndots:5; confirm with the pod's /etc/resolv.conf and `conntrack -S | grep insert_failed` on the nodes. Deploy NodeLocal DNSCache, and for {h} set `single-request-reopen` and lower ndots (or use trailing-dot FQDNs).",
  ("SEV3", "5 s latency spikes on {h}", "p99 latency rose from 180 ms to 5.3 s for about 4% of requests during peak traffic."))

A(N, "Site-to-site IPsec tunnel down: IKE NO_PROPOSAL_CHOSEN",
  ["strongSwan log: 'received NO_PROPOSAL_CHOSEN notify error' / 'no acceptable proposal found'",
   "`swanctl --list-sas` shows no IKE_SA for the peer; `ipsec statusall` shows CONNECTING",
   "Palo Alto / ASA side: 'IKE phase-1 negotiation is failed ... no suitable proposal found'"],
  "Phase 1 (IKE) parameters differ between the two gateways — encryption, integrity/PRF, DH group, IKE version or lifetime — typically after one side hardened its crypto profile or the peer replaced hardware.",
  ["Read the proposal exchange: `journalctl -u strongswan --since '-30 min' | grep -i proposal` shows both the received and configured proposals.",
   "Compare with the peer's agreed crypto sheet (e.g. IKEv2, aes256-sha256-modp2048/ecp256, lifetime 28800 s).",
   "Fix the proposal in swanctl.conf, e.g. `proposals = aes256-sha256-modp2048`, then `swanctl --load-all`.",
   "Initiate and verify: `swanctl --initiate --child net-net` and `swanctl --list-sas` shows ESTABLISHED and INSTALLED.",
   "Generate traffic across the tunnel (`ping -I 10.10.0.1 10.50.0.10`) and check byte counters increase."],
  "The fix requires the remote party (customer or vendor) to change their gateway configuration.",
  "vpn ipsec ike strongswan proposal site-to-site network",
  ["vpn-gw-01", "vpn-gw-02", "s2s-fra-01"],
  ["tunnel to the Frankfurt partner on {h} is down since they upgraded their firewall. logs say NO_PROPOSAL_CHOSEN",
   "the site to site vpn on {h} won't come up, it keeps 'connecting'. I think our certificate expired"],
  "NO_PROPOSAL_CHOSEN means the IKE phase 1 proposals differ; compare the received vs configured proposals in the strongSwan log on {h} with the agreed crypto sheet. Align `proposals` in swanctl.conf (cipher, integrity, DH group, IKE version), `swanctl --load-all`, initiate the SA and verify ESTABLISHED/INSTALLED with traffic counters increasing.",
  ("SEV2", "Partner site-to-site VPN down on {h}", "EDI order exchange with a logistics partner stopped for 2.5 hours; 340 orders were delayed."),
  ("s2s tunnel on {h} to customer ACME down after THEIR firewall replacement. log shows they now offer only 3des-md5, we're configured for aes256-sha256",
   "The customer's new gateway proposes only 3DES/MD5, which we must not downgrade to, so the fix is on their side. Escalate to Network Engineering on-call to coordinate with the customer's network team to configure the agreed AES256/SHA256 proposal."))

A(N, "IPsec tunnel up but no traffic: phase 2 TS_UNACCEPTABLE / selector mismatch",
  ["strongSwan log: 'received TS_UNACCEPTABLE notify, no CHILD_SA built'",
   "IKE_SA ESTABLISHED but no CHILD_SA in `swanctl --list-sas`; traffic to remote subnet times out",
   "Only one of several remote subnets is reachable over the tunnel"],
  "The traffic selectors (local/remote subnets, proxy-IDs) differ between the two gateways — e.g. one side defines 10.50.0.0/16 and the other 10.50.1.0/24 — so the CHILD_SA is refused or covers only part of the traffic.",
  ["Check `swanctl --list-sas` and the log for TS_UNACCEPTABLE; note the proposed TSi/TSr.",
   "Compare `local_ts`/`remote_ts` in /etc/swanctl/conf.d/*.conf with the peer's proxy-IDs exactly (mask lengths must match for many vendors).",
   "Correct the selectors (or define one child per subnet pair for vendors that do not support multiple TS) and `swanctl --load-all`.",
   "Re-initiate the child: `swanctl --terminate --child net-net; swanctl --initiate --child net-net`.",
   "Verify routing/policy: `ip xfrm policy` contains the subnets and NAT exemption rules exclude the tunnel traffic."],
  "The remote side must change their selectors or NAT-exemption rules.",
  "vpn ipsec traffic-selector phase2 strongswan network",
  ["vpn-gw-01", "vpn-gw-02", "s2s-ny-01"],
  ["VPN on {h} shows 'up' but we can't reach 10.50.1.20 on the other side. Firewall maybe?",
   "since the partner added a new subnet only the old one works over the tunnel on {h}"],
  "An established IKE_SA without a matching CHILD_SA (TS_UNACCEPTABLE in the log on {h}) means the phase 2 traffic selectors differ. Align `local_ts`/`remote_ts` exactly with the peer's proxy-IDs (one child per subnet pair if needed), reload with `swanctl --load-all`, re-initiate the child, and check `ip xfrm policy` and NAT exemptions.",
  ("SEV3", "Partial reachability over site-to-site tunnel on {h}", "A newly added partner subnet was unreachable for 1 day; file transfers for one business unit failed."))

A(N, "Remote-access VPN connects but internal names do not resolve (split DNS not applied)",
  ["VPN shows 'Connected' but `nslookup jira.corp.example.com` returns NXDOMAIN or uses the home router (192.168.1.1)",
   "Internal sites open by IP but not by name while on VPN",
   "macOS `scutil --dns` has no resolver entry for corp.example.com"],
  "The VPN profile uses split tunnelling but the split-DNS domain list (or DNS servers) is not pushed or not applied by the client OS, so queries for corp.example.com go to the local ISP resolver.",
  ["Check the client resolver configuration: `scutil --dns` (macOS), `Get-DnsClientNrptPolicy` and `Get-DnsClientServerAddress` (Windows), `resolvectl status` (Linux).",
   "Verify the gateway group-policy pushes `split-dns value corp.example.com` (AnyConnect) or the DNS suffix list (GlobalProtect: Network > GlobalProtect > Gateways > Agent > Network Services).",
   "On Linux with NetworkManager ensure `ipv4.dns-search ~corp.example.com` is set on the VPN connection so systemd-resolved routes the domain.",
   "Reconnect the VPN and verify `nslookup jira.corp.example.com` answers from 10.0.0.53.",
   "If only one user is affected, reinstall the client and check for third-party DNS filtering software overriding resolvers."],
  "Split-DNS is missing from the gateway policy for all users (requires a VPN configuration change).",
  "vpn dns split-tunnel anyconnect globalprotect network",
  ["laptop-mchen", "laptop-jdoe", "MBP-ANNA-K"],
  ["connected to VPN but jira and confluence won't load ('site can't be reached'). google works. is jira down?",
   "on VPN from home, internal stuff only works with IP address. my laptop is {h}"],
  "The tunnel is up but queries for corp.example.com go to the home resolver because split DNS is not applied; check `scutil --dns` / `Get-DnsClientNrptPolicy` / `resolvectl status` on {h}. Make sure the VPN group policy pushes the split-DNS domain (or set `ipv4.dns-search ~corp.example.com` on Linux), reconnect, and confirm internal names resolve via 10.0.0.53.",
  ("SEV3", "Remote users unable to resolve internal names over VPN", "About 400 remote employees could not reach internal web apps by name for 90 minutes after a VPN policy change."),
  ("Since the VPN change this morning NOBODY on my team (12 people, mac and windows) can open internal sites by name on vpn, only by IP",
   "When every user is affected right after a VPN policy change, the split-DNS domain list is missing from the gateway group policy, not the clients. Escalate to Network Engineering on-call to restore the split-dns setting in the VPN policy; client-side changes will not help."))

A(N, "Large transfers over VPN/tunnel hang while small requests work (MTU / MSS)",
  ["SSH logs in but `git clone`, `scp` or HTTPS downloads stall at the same point",
   "`ping -M do -s 1472 10.50.0.10` fails with 'Frag needed and DF set' or no reply, while `-s 1300` works",
   "Web pages partially load over the tunnel; TLS handshakes time out after ClientHello"],
  "IPsec/GRE/WireGuard encapsulation reduces the usable MTU (typically 1400-1420), and ICMP 'fragmentation needed' messages are filtered so path-MTU discovery fails; full-size TCP segments are silently dropped (PMTUD black hole).",
  ["Find the working size: `ping -M do -s 1372 <remote-ip>` and increase until it fails (Windows: `ping -f -l 1372`); `tracepath <remote-ip>` shows the discovered pmtu.",
   "Clamp TCP MSS on the tunnel interface: Cisco `ip tcp adjust-mss 1360`, Linux `iptables -t mangle -A FORWARD -p tcp --tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu`.",
   "Set the tunnel interface MTU explicitly (e.g. `ip link set dev wg0 mtu 1420`, `ip mtu 1400` on a tunnel).",
   "Permit ICMP type 3 code 4 (IPv6: ICMPv6 type 2 'Packet Too Big') through firewalls on the path.",
   "Re-test the original transfer."],
  "The black hole is inside a provider network we do not control.",
  "mtu mss pmtud vpn tunnel fragmentation network",
  ["vpn-gw-02", "wg-hub-01", "branch-rtr-lon"],
  ["git clone over the VPN hangs forever at 'Receiving objects: 3%', but ssh to the same server works fine",
   "since we moved the branch onto the new tunnel via {h}, some websites only half load and big file copies freeze",
   "scp from the DC via {h} stalls after a few kb. is the server overloaded?"],
  "Small packets pass but full-size ones are dropped because the tunnel lowers the MTU and ICMP 'fragmentation needed' is filtered (PMTUD black hole); confirm with `ping -M do -s 1472` vs `-s 1372` and `tracepath`. Clamp TCP MSS on {h} (`ip tcp adjust-mss 1360` or iptables TCPMSS `--clamp-mss-to-pmtu`), set the tunnel MTU explicitly, and allow ICMP type 3 code 4 through firewalls.",
  ("SEV3", "Stalled large transfers across tunnel on {h}", "Branch staff could not download files over 10 KB from the DC for 4 hours; backups to the DC failed."))

A(N, "WireGuard peer shows no handshake",
  ["`wg show` lists the peer without a 'latest handshake' line; 'transfer: 0 B received, 8.3 KiB sent'",
   "Ping across the tunnel: 'Destination address required' or 100% packet loss",
   "No errors logged — WireGuard silently drops packets from unknown keys"],
  "WireGuard only responds to packets authenticated with a known public key, so a wrong or swapped public key, a wrong Endpoint host/port, or UDP/51820 being blocked results in no handshake without any error message.",
  ["On both ends run `wg show wg0` and compare: each side's `peer:` key must equal the other side's `public key` (derive with `wg pubkey < privatekey`).",
   "Verify the Endpoint resolves and is reachable: `nc -vzu vpn.example.com 51820` and `tcpdump -ni eth0 udp port 51820` on the server while the client pings.",
   "Check AllowedIPs contains the tunnel address of the peer (e.g. 10.8.0.5/32) and does not overlap another peer.",
   "Behind NAT, set `PersistentKeepalive = 25` on the client.",
   "Reload without dropping other peers: `wg syncconf wg0 <(wg-quick strip wg0)`."],
  "UDP/51820 is blocked by an upstream firewall or ISP that we do not manage.",
  "vpn wireguard handshake udp network",
  ["wg-hub-01", "wg-lab-02", "edge-vpn-03"],
  ["set up wireguard to {h} following the wiki, it says connected but nothing goes through. no handshake",
   "my wg tunnel to {h} stopped working after I regenerated my keys"],
  "No 'latest handshake' means {h} is discarding the packets, almost always because the peer public keys do not match (e.g. after regenerating keys), the Endpoint is wrong, or UDP/51820 is blocked. Compare `wg show` on both sides, update the peer key/AllowedIPs, check UDP 51820 with tcpdump, add `PersistentKeepalive = 25` behind NAT and reload with `wg syncconf`.",
  ("SEV4", "Lab WireGuard peers unable to connect to {h}", "12 engineers could not reach the lab network for half a day after a key rotation."))

A(N, "AnyConnect users cannot connect: address pool exhausted",
  ["AnyConnect client shows 'Login failed' or the connection attempt ends immediately after a successful password + MFA prompt",
   "ASA syslog: %ASA-3-722020: TunnelGroup <CORP-VPN> GroupPolicy <GP-STAFF> User <jdoe> IP <198.51.100.23> No address available for SVC connection",
   "`show ip local pool VPN-POOL` shows Free: 0"],
  "The IPv4 address pool assigned to the tunnel group is exhausted, typically after growth in remote users, stale sessions not timing out (idle-timeout too long), or a pool that was sized as /24 for a few hundred users.",
  ["Confirm: `show ip local pool VPN-POOL` and `show vpn-sessiondb summary` on the ASA.",
   "Log off stale sessions if needed: `vpn-sessiondb logoff name <user> noconfirm`; check `vpn-idle-timeout` in the group-policy (30 min is typical).",
   "Add a second pool range: `ip local pool VPN-POOL2 10.220.4.1-10.220.7.254 mask 255.255.252.0` and `address-pool VPN-POOL VPN-POOL2` under the tunnel-group general-attributes.",
   "Make sure the new range is routed back to the ASA on the core (static route or redistribution).",
   "Verify users can connect and `show ip local pool` shows free addresses."],
  "Adding pool space requires a new routed range from IPAM or the ASA is at its licensed AnyConnect session limit.",
  "vpn anyconnect asa address-pool network",
  ["vpn-gw-01", "vpn-gw-02", "asa-vpn-fra"],
  ["VPN keeps saying login failed this morning although my password and MFA are correct. colleagues have same problem",
   "half the sales team can't connect to VPN ({h}). we changed nothing. maybe password expired for all?"],
  "The ASA log on {h} will show %ASA-3-722020 'No address available for SVC connection' and `show ip local pool` shows Free: 0, so users fail after authenticating. Log off stale sessions and tighten `vpn-idle-timeout`, then add a second pool range to the tunnel group and make sure it is routed back to the ASA.",
  ("SEV2", "VPN address pool exhausted on {h}", "Roughly 350 remote users were unable to connect to the VPN between 08:30 and 10:10."),
  ("VPN on {h} full again, pool shows 0 free and show vpn-sessiondb says we're at 2500/2500 licensed sessions",
   "Adding pool space will not help when the ASA is at its licensed AnyConnect session limit (2500/2500). Log off clearly stale sessions as a stopgap and escalate to Network Engineering on-call to add licences or move users to the second gateway."))

A(N, "Host lands in wrong subnet: access port in wrong VLAN",
  ["Workstation gets a 10.30.x.x address (guest VLAN) instead of 10.20.x.x",
   "`show interfaces Gi1/0/14 switchport` shows 'Access Mode VLAN: 30 (GUEST)'",
   "Device cannot reach internal resources; DHCP works but in wrong scope"],
  "The switch port was configured (or left) in the wrong access VLAN, often after a desk move, a template push, or a NAC/dynamic VLAN assignment falling back to the guest VLAN.",
  ["Find the port from the MAC: `show mac address-table address aabb.cc00.1234` and check `show interfaces Gi1/0/14 switchport`.",
   "If 802.1X/MAB is used, check `show access-session interface Gi1/0/14 details` — a guest/auth-fail VLAN means authentication failed, not a static misconfiguration.",
   "Set the correct VLAN: `interface Gi1/0/14`, `switchport mode access`, `switchport access vlan 20`, and `description DESK-3F-112`.",
   "Bounce the port (`shutdown` / `no shutdown`) so the client renews DHCP, and verify the new lease (`ipconfig /renew`).",
   "Save: `copy running-config startup-config`."],
  "The VLAN does not exist on the switch or must be added to the uplink trunk (core change).",
  "vlan switchport access-port dhcp network",
  ["sw-3f-access-02", "sw-2f-access-01", "sw-lab-04"],
  ["after moving desks my PC gets a 10.30 address and I can't reach the file server. the guest wifi range?",
   "new printer on 3rd floor ({h} port 14) only gets guest IP"],
  "Locate the port via `show mac address-table address <mac>` on {h} and check `show interfaces <port> switchport`; if 802.1X/MAB put it in the guest VLAN it is an authentication problem, otherwise the access VLAN is wrong. Set `switchport access vlan` to the correct user VLAN, bounce the port so DHCP renews, verify the address and save the config.",
  ("SEV4", "Desks on {h} assigned to guest VLAN", "Eight users on one floor were on the guest network for a morning and could not reach internal systems."))

A(N, "VLAN not carried over trunk (missing from allowed list)",
  ["Hosts in VLAN 120 on the access switch cannot reach their gateway; other VLANs work",
   "`show interfaces trunk` does not list VLAN 120 under 'Vlans allowed and active in management domain'",
   "ARP for the SVI gateway stays incomplete"],
  "The uplink trunk's `switchport trunk allowed vlan` list does not include the VLAN (or the VLAN was not created on one of the switches), so frames for it are dropped at the trunk.",
  ["Check both ends: `show interfaces trunk` and `show vlan brief | include 120`.",
   "Create the VLAN if missing: `vlan 120`, `name APP-SERVERS`.",
   "Add it to the trunk WITH the add keyword: `interface Po1`, `switchport trunk allowed vlan add 120` — omitting `add` replaces the whole list and cuts every other VLAN.",
   "Verify with `show interfaces trunk` that VLAN 120 is 'allowed and active' and 'in spanning tree forwarding state'.",
   "Test `ping` to the SVI gateway from a host in the VLAN."],
  "The VLAN must be added on core/distribution switches or through a change-controlled fabric (ACI/EVPN).",
  "vlan trunk switchport network",
  ["sw-dist-01", "sw-3f-access-02", "sw-dc-tor-07"],
  ["the new servers in vlan 120 can't ping the gateway, other vlans on {h} are fine",
   "we patched the new rack but the servers get no network in the app-servers vlan. cabling issue?"],
  "VLAN 120 is not carried on the uplink: `show interfaces trunk` on {h} will not list it as allowed/active. Create the VLAN if missing and add it with `switchport trunk allowed vlan add 120` (never without `add`, which replaces the list), then verify forwarding state and ping the gateway.",
  ("SEV3", "New VLAN not trunked to {h}", "Deployment of 14 new application servers was blocked for a day."))

A(N, "Port err-disabled by BPDU Guard",
  ["%SPANTREE-2-BLOCK_BPDUGUARD: Received BPDU on port Gi1/0/12 with BPDU Guard enabled. Disabling port.",
   "%PM-4-ERR_DISABLE: bpduguard error detected on Gi1/0/12, putting Gi1/0/12 in err-disable state",
   "`show interfaces status err-disabled` lists the port; the link LED is off/amber"],
  "A PortFast edge port with BPDU Guard received a spanning-tree BPDU because someone connected a switch, a hub with STP or a looped cable, and the switch shut the port to prevent a loop.",
  ["Identify the cause: `show interfaces status err-disabled` and `show logging | include BPDUGUARD`.",
   "Remove the offending device (unmanaged desk switch, looped cable) — re-enabling with it still attached will err-disable again.",
   "Re-enable: `interface Gi1/0/12`, `shutdown`, `no shutdown`.",
   "Optionally enable automatic recovery: `errdisable recovery cause bpduguard` and `errdisable recovery interval 300`."],
  "The port must legitimately connect a switch (requires trunk/port design change), or err-disable repeats after removing the device.",
  "switch bpdu-guard err-disabled spanning-tree network",
  ["sw-2f-access-01", "sw-4f-access-03", "sw-conf-01"],
  ["my network port is dead since I plugged in the small switch so I could connect my second laptop",
   "meeting room on 4th floor ({h}) has no network, the port light is orange"],
  "The port on {h} was err-disabled by BPDU Guard because a switch or looped cable was connected (`show interfaces status err-disabled`, %SPANTREE-2-BLOCK_BPDUGUARD). Remove the offending device, then `shutdown`/`no shutdown` on the port, and consider `errdisable recovery cause bpduguard`.",
  ("SEV4", "Conference floor ports err-disabled on {h}", "Three meeting rooms lost wired connectivity for a morning after an unmanaged switch was plugged in."))

A(N, "Native VLAN mismatch on trunk",
  ["%CDP-4-NATIVE_VLAN_MISMATCH: Native VLAN mismatch discovered on GigabitEthernet1/0/48 (1), with sw-core-01 GigabitEthernet0/1 (99).",
   "Untagged management traffic (switch mgmt IPs) unreachable; devices in VLAN 1 and VLAN 99 see each other's broadcasts",
   "Spanning tree: %SPANTREE-2-RECV_PVID_ERR: Received BPDU with inconsistent peer vlan id 99 on GigabitEthernet1/0/48 VLAN1"],
  "The two ends of a trunk use different native (untagged) VLANs, so untagged frames leak between VLANs and PVST+ blocks the inconsistent VLANs.",
  ["Confirm on both ends: `show interfaces Gi1/0/48 trunk` — compare the 'Native vlan' column.",
   "Set the standard native VLAN on the wrong end (site standard is 99): `interface Gi1/0/48`, `switchport trunk native vlan 99`.",
   "Check spanning tree clears: `show spanning-tree inconsistentports`.",
   "Save the config and verify management reachability."],
  "The mismatch is on a core switch or a provider hand-off.",
  "vlan trunk native-vlan cdp spanning-tree network",
  ["sw-3f-access-02", "sw-dist-01", "sw-lab-04"],
  ["switch {h} logs are full of NATIVE_VLAN_MISMATCH and we lost management access to it",
   "after replacing {h} some VLANs seem to be mixed up, clients get weird addresses"],
  "Compare `show interfaces <uplink> trunk` on both ends of {h}'s uplink; the native VLANs differ, which leaks untagged traffic and makes PVST+ block VLANs. Set `switchport trunk native vlan 99` (site standard) on the wrong end, confirm `show spanning-tree inconsistentports` is empty and save.",
  ("SEV4", "Native VLAN mismatch after switch swap on {h}", "Management of one floor's switches was lost for 2 hours; some clients received wrong DHCP leases."))

A(N, "NGINX returns 502 Bad Gateway",
  ["Users see '502 Bad Gateway nginx/1.24.0'",
   "error.log: connect() failed (111: Connection refused) while connecting to upstream, upstream: \"http://10.1.4.21:8080/\"",
   "error.log: upstream prematurely closed connection while reading response header from upstream"],
  "NGINX reached no healthy upstream: the application process is down or listening on a different port/interface, it crashed mid-request, or keepalive connections are closed by the upstream before NGINX reuses them.",
  ["Read the exact error: `tail -n 50 /var/log/nginx/error.log` — 'Connection refused' = nothing listening; 'prematurely closed' = upstream crashed or closed the connection.",
   "On the upstream host check the service and port: `systemctl status app`, `ss -ltnp | grep 8080`, and test locally `curl -sv http://127.0.0.1:8080/healthz`.",
   "Restart or fix the upstream (check its logs for crashes/OOM), and make sure it binds 0.0.0.0 or the IP NGINX uses, not only 127.0.0.1.",
   "For 'prematurely closed' with keepalive, ensure the upstream keepalive timeout is longer than NGINX's (`keepalive_timeout` in the upstream block) and set `proxy_http_version 1.1; proxy_set_header Connection \"\";`.",
   "Validate and reload NGINX: `nginx -t && systemctl reload nginx`."],
  "All upstream instances are down and the application team cannot restore them, or the 502s coincide with a deploy that must be rolled back.",
  "nginx 502 load-balancer upstream reverse-proxy network",
  ["lb-web-01", "lb-web-02", "edge-nginx-03"],
  ["the portal shows '502 Bad Gateway nginx' since 10 min. everyone in my team. is the internet down?",
   "getting 502 from {h} for /api/orders, other paths ok",
   "502 bad gateway on intranet. pls fix asap, month end closing!!"],
  "A 502 from {h} means NGINX could not get a response from its upstream; the error.log line tells which case ('Connection refused' = app not listening, 'prematurely closed' = app crashed or closed keepalive). Check and restart the upstream service (`systemctl status`, `ss -ltnp`, `curl` its health endpoint), fix the bind address or keepalive settings, then `nginx -t && systemctl reload nginx`.",
  ("SEV2", "502 errors from {h}", "About 35% of requests to the customer portal failed with 502 for 25 minutes."),
  ("502 on everything behind {h} right after the 14:00 deploy of orders-api, all 6 upstream instances refusing connections",
   "All upstream instances refusing connections right after a deploy means the release is broken, not NGINX. Escalate to the orders-api owning team / incident commander to roll back the 14:00 deployment, and reload NGINX only after upstream health checks pass."))

A(N, "NGINX returns 504 Gateway Timeout",
  ["Users get '504 Gateway Time-out' after exactly 60 seconds",
   "error.log: upstream timed out (110: Connection timed out) while reading response header from upstream",
   "Long-running report/export endpoints fail while fast endpoints work"],
  "The upstream did not send response headers within `proxy_read_timeout` (default 60 s): either the request legitimately takes longer (exports, reports) or the backend is saturated/blocked (e.g. waiting on the database).",
  ["Confirm which upstream and URI time out from error.log and the access log `$upstream_response_time`.",
   "Check backend health: CPU, thread pool saturation, slow queries (e.g. `SELECT pid, now()-query_start, query FROM pg_stat_activity WHERE state='active' ORDER BY 2 DESC;`).",
   "If the endpoint is legitimately slow, raise the timeout only for that location: `location /reports/ { proxy_read_timeout 300s; }` — do not raise it globally.",
   "Better, make long jobs asynchronous (return 202 and poll) and fix slow queries.",
   "`nginx -t && systemctl reload nginx` and re-test."],
  "The backend is saturated for all endpoints or the database shows blocking/locks you cannot resolve.",
  "nginx 504 timeout load-balancer upstream network",
  ["lb-web-01", "lb-int-02", "edge-nginx-03"],
  ["the export to excel always fails with 504 Gateway Time-out after a minute. small exports work",
   "{h} returns 504 for the monthly report page. it was OK last month"],
  "A 504 after exactly 60 s means the upstream did not answer within `proxy_read_timeout`; check error.log on {h} and the backend for saturation or slow queries (pg_stat_activity). If the endpoint is legitimately slow, raise `proxy_read_timeout` only for that location (e.g. 300s) and reload, and longer term make the export asynchronous.",
  ("SEV3", "504 timeouts on report endpoints via {h}", "Month-end finance reports failed for 3 hours until the timeout and a slow query were fixed."))

A(N, "AWS ALB targets unhealthy (health check failing)",
  ["ALB returns '503 Service Temporarily Unavailable' with no healthy targets",
   "`aws elbv2 describe-target-health` shows State unhealthy, Reason Target.ResponseCodeMismatch, Description 'Health checks failed with these codes: [404]'",
   "Reason Target.Timeout: 'Request timed out' for all targets in the target group"],
  "The health check does not match the application: wrong path or port, the app returns 301/404 for the check path, or the target security group does not allow traffic from the ALB security group (Target.Timeout).",
  ["List health and reasons: `aws elbv2 describe-target-health --target-group-arn <arn>`.",
   "Check the health check config: `aws elbv2 describe-target-groups --target-group-arns <arn> --query 'TargetGroups[0].[HealthCheckPath,HealthCheckPort,Matcher]'`.",
   "From a host in the VPC: `curl -i http://<target-ip>:8080/healthz` — fix the path or set the matcher (e.g. `aws elbv2 modify-target-group --target-group-arn <arn> --health-check-path /healthz --matcher HttpCode=200`).",
   "For Target.Timeout, allow the ALB's security group on the target port in the instance/pod security group.",
   "Wait for HealthyThresholdCount successes and confirm State healthy."],
  "Targets are unhealthy because the application itself is failing (5xx on health checks) after a release.",
  "aws alb load-balancer health-check target-group 503 network",
  ["alb-checkout-prod", "alb-internal-api", "alb-partner-gw"],
  ["{h} shows 503 Service Temporarily Unavailable, but the instances are running fine! I can ssh into them",
   "new target group for {h} all targets 'unhealthy'. app works when I curl localhost"],
  "Run `aws elbv2 describe-target-health` for {h}'s target group: ResponseCodeMismatch means the health-check path/matcher is wrong, Target.Timeout means the target security group does not allow the ALB. Fix the path/port/matcher with `aws elbv2 modify-target-group` or allow the ALB security group on the target port, then wait for targets to become healthy.",
  ("SEV2", "All targets unhealthy behind {h}", "The checkout service returned 503 for 12 minutes after a health-check path change; ~2,300 checkouts failed."))

A(N, "HAProxy: 'backend has no server available'",
  ["HAProxy log: backend be_api has no server available!",
   "Server be_api/api-03 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\"",
   "Clients receive '503 Service Unavailable - No server is available to handle this request.'"],
  "All servers in the backend failed their health checks (service down, wrong check port, or a check that hits an endpoint requiring auth), so HAProxy has nothing to route to.",
  ["Check state per server: `echo 'show servers state be_api' | socat stdio /run/haproxy/admin.sock` or the stats page.",
   "Read the reason: Layer4 = TCP connect failed (service down/firewall), Layer7 = HTTP check got a wrong status (e.g. 401 on an authenticated endpoint).",
   "Fix the service or the check: `option httpchk GET /healthz` and `http-check expect status 200`.",
   "Validate and reload without dropping connections: `haproxy -c -f /etc/haproxy/haproxy.cfg && systemctl reload haproxy`.",
   "Drain a server for maintenance with `echo 'set server be_api/api-03 state drain' | socat stdio /run/haproxy/admin.sock` instead of letting checks fail."],
  "All backend servers are down because of an application or database outage.",
  "haproxy 503 health-check load-balancer network",
  ["lb-api-01", "lb-api-02", "haproxy-int-01"],
  ["api via {h} returns 'No server is available to handle this request'. the api servers are up I think",
   "after the api upgrade {h} marks every server DOWN Layer7 wrong status"],
  "HAProxy on {h} has marked every server in the backend DOWN; check `show servers state` on the admin socket and the check reason (Layer4 = service unreachable, Layer7 = wrong HTTP status such as 401 on an auth-protected check). Fix the service or point `option httpchk` at an unauthenticated /healthz with `http-check expect status 200`, then validate and `systemctl reload haproxy`.",
  ("SEV2", "HAProxy on {h} had no available backends", "Internal API consumers received 503 for 18 minutes after a health endpoint started requiring authentication."))

A(N, "NGINX '413 Request Entity Too Large' on uploads",
  ["Upload fails with '413 Request Entity Too Large' page from nginx",
   "error.log: client intended to send too large body: 15728640 bytes",
   "Small files upload fine; anything over 1 MB fails"],
  "NGINX limits request bodies with `client_max_body_size`, which defaults to 1 MB; larger uploads are rejected before reaching the application (an ingress-nginx controller uses the same default).",
  ["Confirm in error.log ('client intended to send too large body').",
   "Raise the limit for the upload location only: `location /upload { client_max_body_size 50m; }`.",
   "On Kubernetes ingress-nginx, annotate the Ingress: `nginx.ingress.kubernetes.io/proxy-body-size: \"50m\"`.",
   "Check the application's own limit as well (e.g. Spring `spring.servlet.multipart.max-file-size`, PHP `upload_max_filesize`).",
   "`nginx -t && systemctl reload nginx` and retry the upload."],
  "Uploads larger than 100 MB are requested (needs architecture review, e.g. direct-to-S3 presigned uploads).",
  "nginx 413 upload client_max_body_size ingress network",
  ["lb-web-01", "docs-portal", "ingress-nginx-prod"],
  ["can't upload my PDF to the docs portal, it says 413 Request Entity Too Large. file is only 15MB",
   "uploads to {h} over 1mb fail. we need 20mb invoices to work"],
  "NGINX's `client_max_body_size` defaults to 1 MB, so {h} rejects larger uploads with 413. Raise it for the upload location (or set `nginx.ingress.kubernetes.io/proxy-body-size: \"50m\"` on the Ingress), check the app's own upload limit, then `nginx -t && systemctl reload nginx`.",
  ("SEV4", "Invoice uploads rejected by {h}", "Accounts payable could not upload supplier invoices over 1 MB for two days."))

A(N, "DHCP scope exhausted: clients get 169.254.x.x",
  ["Windows clients show 'Autoconfiguration IPv4 Address 169.254.12.7' / no network access",
   "ISC dhcpd log: DHCPDISCOVER from 3c:22:fb:10:aa:01 via 10.40.0.1: network 10.40.0.0/22: no free leases",
   "Windows DHCP: Event ID 1020 'Scope 10.40.0.0 ... is 100 percent full with only 0 IP addresses remaining'"],
  "All addresses in the scope are leased, typically on guest/Wi-Fi VLANs with long lease times (8 days default on Windows) and many transient devices, or after the scope was sized too small.",
  ["Confirm usage: `Get-DhcpServerv4ScopeStatistics -ScopeId 10.40.0.0` or for ISC `dhcpd-pools -c /etc/dhcp/dhcpd.conf`.",
   "Shorten the lease time for transient networks (e.g. 4-8 hours): `Set-DhcpServerv4Scope -ScopeId 10.40.0.0 -LeaseDuration 08:00:00`.",
   "Remove stale leases/bad addresses: `Get-DhcpServerv4Lease -ScopeId 10.40.0.0 | Where AddressState -like '*Declined*' | Remove-DhcpServerv4Lease`.",
   "If growth is real, extend the scope (requires a larger subnet/VLAN change and matching router interface mask).",
   "Have clients renew: `ipconfig /release && ipconfig /renew`."],
  "The subnet itself must be enlarged (router/SVI and IPAM change).",
  "dhcp scope lease 169.254 apipa wifi network",
  ["dhcp-01", "dhcp-02", "branch-rtr-lon"],
  ["wifi connected but no internet, ipconfig shows 169.254 address. lots of people on 2nd floor",
   "guest wifi at the event space doesn't give addresses anymore. 200 visitors today"],
  "169.254.x.x means the client got no DHCP lease; on {h} the scope will show 100% in use ('no free leases' / Event 1020). Shorten the lease time for the transient scope, clear declined/stale leases, extend the scope if growth is real, and have clients `ipconfig /renew`.",
  ("SEV3", "DHCP scope exhaustion on {h}", "Guest and staff Wi-Fi on two floors could not obtain addresses for 70 minutes during an all-hands event."),
  ("the 10.40.0.0/22 scope on {h} keeps hitting 100% even with 4h leases. we just have way more devices since the new floor opened",
   "Lease tuning is already done and the growth is real, so the subnet itself must be enlarged. Escalate to Network Engineering on-call to allocate a larger range in IPAM and change the SVI/VLAN and DHCP scope together."))

A(N, "New VLAN gets no DHCP: missing ip helper-address (DHCP relay)",
  ["Clients on the new VLAN send DHCPDISCOVER but never get an offer",
   "No entries for the subnet in the DHCP server log at all",
   "Static IP in the VLAN works"],
  "DHCP broadcasts do not cross routers; the SVI for the new VLAN lacks `ip helper-address` pointing at the DHCP servers (or the server has no scope for that subnet).",
  ["Check the SVI: `show run interface Vlan140 | include helper`.",
   "Add relays to both DHCP servers: `interface Vlan140`, `ip helper-address 10.0.0.67`, `ip helper-address 10.0.1.67`.",
   "Confirm a scope exists for 10.140.0.0/24 on the DHCP server with router option 003 = SVI address.",
   "Debug if needed: `tcpdump -ni eth0 port 67 or port 68` on the DHCP server to see relayed DISCOVERs with giaddr 10.140.0.1.",
   "Renew on a client and verify the lease."],
  "The DHCP server needs a new scope owned by another team, or the SVI is on a firewall cluster you do not manage.",
  "dhcp relay ip-helper vlan network",
  ["core-sw-01", "dist-sw-02", "fw-core-01"],
  ["new lab VLAN 140: machines get no IP at all. dhcp server broken?",
   "IP phones in the new vlan on {h} stuck at 'DHCP...'"],
  "DHCP broadcasts do not cross the router, so the new VLAN's SVI on {h} needs `ip helper-address` entries for both DHCP servers, and the server needs a scope for the subnet with the correct router option. Add the helpers, verify relayed DISCOVERs with tcpdump on the server, and renew a client.",
  ("SEV4", "No DHCP on new VLAN behind {h}", "A new lab of 40 machines could not get addresses on its first day."))

A(N, "Connection timeouts to a new service port (firewall rule missing)",
  ["`nc -vz db-report-01 5432` → 'Connection timed out' (not 'refused')",
   "Application log: dial tcp 10.2.3.4:5432: i/o timeout",
   "tcpdump on the server shows no SYN arriving"],
  "A stateful firewall between the segments silently drops the new flow because no rule permits source/destination/port; timeouts (not RST) indicate a drop in the path rather than a closed port.",
  ["Distinguish drop vs closed: `nc -vz host port` — 'refused' means reachable but no listener; 'timed out' suggests a firewall drop.",
   "Capture on the destination: `tcpdump -ni any 'tcp port 5432 and host 10.1.7.20'` — no SYN means it is dropped upstream.",
   "Check host firewalls as well: `iptables -L -n -v | grep 5432` / `nft list ruleset` / `firewall-cmd --list-all`.",
   "Search the perimeter/segment firewall logs for the denied flow (e.g. Palo Alto Monitor > Traffic filter `( port.dst eq 5432 )`) and submit a rule request with source, destination, port and business justification.",
   "Re-test with nc after the change is implemented."],
  "A rule change on a production segment firewall is needed (requires CAB approval by Network/Security).",
  "firewall timeout rule port connectivity network",
  ["db-report-01", "kafka-broker-03", "sftp-ext-01"],
  ["our new reporting job can't connect to {h}: i/o timeout. the DB must be down",
   "telnet to {h} port 9093 just hangs. works from the other subnet"],
  "A timeout (not 'connection refused') to {h} means the packets are dropped in the path; confirm with `nc -vz` and a tcpdump on the server showing no SYN, and check the host firewall. Find the deny in the segment firewall logs and raise a firewall rule request with source, destination, port and justification, then re-test.",
  ("SEV4", "New integration blocked by firewall to {h}", "A scheduled integration failed for 2 days until a rule was added."),
  ("Need port 5432 opened from the new analytics subnet 10.88.0.0/16 to {h} in the PCI zone today, the firewall logs confirm it's denied",
   "The deny is confirmed, but opening a flow into the PCI production segment is a firewall change that requires CAB approval. Escalate to Network/Security (firewall change owners) with the source, destination, port and justification; do not add an ad-hoc rule."))

A(N, "CLI tools fail behind proxy: 'Received HTTP code 407 from proxy after CONNECT'",
  ["curl: (56) Received HTTP code 407 from proxy after CONNECT",
   "pip: ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: 407 Proxy Authentication Required'))",
   "Internal URLs fail through the proxy with 403 or time out"],
  "The outbound proxy requires authentication (or an allowlisted source) and the tool is not sending credentials, or internal hosts are sent to the proxy because NO_PROXY is missing them.",
  ["Check environment: `env | grep -i _proxy` — tools read HTTPS_PROXY/https_proxy and NO_PROXY.",
   "Use the authenticated form where allowed: `export HTTPS_PROXY=http://user:pass@proxy.corp.example.com:3128` (URL-encode special characters in the password), or request a service account/IP allowlist for servers.",
   "Exclude internal destinations: `export NO_PROXY=localhost,127.0.0.1,.corp.example.com,10.0.0.0/8,.svc,.cluster.local` (note: CIDR support in NO_PROXY varies by tool).",
   "For apt, set `Acquire::https::Proxy \"http://proxy.corp.example.com:3128\";` in /etc/apt/apt.conf.d/95proxy; for Docker daemon use a systemd drop-in with Environment=HTTPS_PROXY.",
   "Re-test with `curl -v https://pypi.org/simple/`."],
  "A server needs a permanent proxy exemption or allowlist entry (proxy policy change by Network/Security).",
  "proxy 407 no_proxy curl pip network",
  ["build-agent-05", "data-sci-ws-12", "jenkins-agent-03"],
  ["pip install fails with 407 Proxy Authentication Required on {h}. my password is correct",
   "curl to github gives 'Received HTTP code 407 from proxy after CONNECT'. network blocked github??"],
  "The proxy requires authentication and the tool on {h} is not sending it; check `env | grep -i _proxy`. Set HTTPS_PROXY with (URL-encoded) credentials or request a service allowlist for the server, add internal domains to NO_PROXY, configure apt/Docker proxy settings explicitly, and retest with `curl -v`.",
  ("SEV4", "Build agents blocked by proxy auth ({h})", "CI builds failed to fetch dependencies for 3 hours after proxy authentication was enforced."))

A(N, "'unable to get local issuer certificate' behind TLS-inspecting proxy",
  ["curl: (60) SSL certificate problem: unable to get local issuer certificate",
   "pip: SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain'))",
   "`openssl s_client -connect pypi.org:443 -servername pypi.org` shows issuer 'CN=Corp Proxy Inspection CA'"],
  "The corporate proxy decrypts and re-signs TLS with the internal inspection CA; tools using their own CA bundle (Python certifi, Node, Java cacerts, Docker images) do not trust that CA.",
  ["Confirm the issuer with `openssl s_client -connect pypi.org:443 -servername pypi.org </dev/null | openssl x509 -noout -issuer`.",
   "Install the corporate root into the OS store: copy corp-root.crt to /usr/local/share/ca-certificates/ and run `update-ca-certificates` (RHEL: /etc/pki/ca-trust/source/anchors + `update-ca-trust`).",
   "Point tools at the OS bundle: `export REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt`, `pip config set global.cert /etc/ssl/certs/ca-certificates.crt`, `export NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/corp-root.crt`.",
   "For Java: `keytool -importcert -cacerts -alias corp-root -file corp-root.crt`.",
   "Never use `verify=False`, `--insecure` or `strict-ssl false` as a fix."],
  "The destination must be added to the TLS-inspection bypass list (e.g. certificate-pinned services), which is a proxy policy change.",
  "proxy tls-inspection ca-bundle certificate curl pip network",
  ["data-sci-ws-12", "laptop-rgupta", "build-agent-05"],
  ["pip install gives CERTIFICATE_VERIFY_FAILED self-signed certificate in certificate chain. is pypi hacked?",
   "npm install on {h} fails: unable to get local issuer certificate. worked at home"],
  "The corporate proxy re-signs TLS with its inspection CA, which Python/Node/Java bundles on {h} do not trust (confirm the issuer with `openssl s_client ... | openssl x509 -noout -issuer`). Install the corporate root CA into the OS store (`update-ca-certificates`) and point tools at it (REQUESTS_CA_BUNDLE, `pip config set global.cert`, NODE_EXTRA_CA_CERTS, keytool for Java) instead of disabling verification.",
  ("SEV4", "TLS verification failures behind proxy on {h}", "Data-science notebooks could not install packages for a day after inspection was enabled for pypi.org."))

A(N, "Wi-Fi 802.1X (PEAP-MSCHAPv2) fails after password change",
  ["Laptop/phone repeatedly prompts for Wi-Fi credentials on CORP-WIFI, then 'Can't connect to this network'",
   "NPS Event ID 6273: 'Network Policy Server denied access to a user' Reason Code 16: 'Authentication failed due to a user credentials mismatch'",
   "Account gets locked out shortly after changing the password (Event 4740)"],
  "The device still has the old domain password cached in its 802.1X/PEAP profile and keeps retrying with it, which fails authentication and can lock the AD account.",
  ["Confirm in NPS logs (Event Viewer > Custom Views > Server Roles > Network Policy and Access Services) the 6273 Reason Code 16 for the user and which device (Calling Station Identifier = MAC).",
   "On the device, forget the network: Windows `netsh wlan delete profile name=\"CORP-WIFI\"`; macOS System Settings > Wi-Fi > Forget; iOS/Android forget and rejoin.",
   "Rejoin with the new password (or, better, move the device to EAP-TLS certificate auth via Intune/MDM).",
   "If the account is locked, unlock it: `Unlock-ADAccount -Identity jdoe` after removing the stale device profile."],
  "NPS shows a different reason code (e.g. 8 'user account does not exist', 65 'dial-in permission' or a certificate error) or many users fail simultaneously.",
  "wifi 802.1x peap nps radius password lockout network",
  ["iPhone-jdoe", "LT-FIN-0231", "Pixel-mchen"],
  ["changed my password yesterday, now my phone can't connect to CORP-WIFI and my account keeps locking",
   "wifi keeps asking for my password over and over on my laptop ({h}). I'm typing it right!"],
  "NPS will show Event 6273 Reason Code 16 for the user from {h}: the device is retrying the old cached password, which also causes lockouts. Forget the CORP-WIFI profile on the device (`netsh wlan delete profile name=\"CORP-WIFI\"` on Windows), rejoin with the new password and unlock the account with `Unlock-ADAccount` if needed.",
  ("SEV4", "Repeated lockouts from stale Wi-Fi credentials ({h})", "One executive's account locked 9 times in a day, blocking email and VPN access."),
  ("since 9am nobody can join CORP-WIFI on floors 1-5, all devices, NPS shows reason code 22 for everyone",
   "This is not a single stale cached password: every user fails with a different NPS reason code (22, EAP type could not be processed), which points at the RADIUS/NPS server certificate or policy. Escalate to Network Engineering on-call (wireless/RADIUS owners) as a site-wide outage."))

A(N, "Wi-Fi EAP-TLS fails: client certificate expired or untrusted CA",
  ["Device fails to join CORP-WIFI without prompting; Windows WLAN-AutoConfig event 12013 'Wireless 802.1X authentication failed'",
   "FreeRADIUS log: 'TLS Alert read:fatal:unknown CA' or 'tls: TLS_accept: error in SSLv3 read client certificate A' / '(TLS) ... certificate has expired'",
   "NPS Event 6273 Reason Code 295/296: 'A certificate chain could not be built' / 'certificate has expired'"],
  "EAP-TLS needs a valid client certificate issued by the CA the RADIUS server trusts, and the device must trust the RADIUS server certificate; an expired device cert (missed auto-renewal), a device never enrolled via MDM/SCEP, or a RADIUS server cert signed by a CA not in the Wi-Fi profile breaks authentication.",
  ["Check the device certificate: Windows `certutil -store -user My` / `certlm.msc`, macOS Keychain 'System' — look at NotAfter and issuer.",
   "Trigger re-enrollment from MDM (Intune: Devices > Sync; Jamf: `sudo jamf recon` and redeploy the SCEP profile).",
   "If the RADIUS log says 'unknown CA' from the client side, the client does not trust the new RADIUS server cert — update the Wi-Fi profile's trusted root/server names.",
   "Test again and confirm Access-Accept in the RADIUS log (`radiusd -X` in a maintenance window for FreeRADIUS debug)."],
  "Many devices fail at once after a RADIUS or CA certificate change.",
  "wifi 802.1x eap-tls certificate radius mdm network",
  ["LT-ENG-0412", "MBP-SALES-07", "LT-HR-0102"],
  ["my laptop ({h}) stopped connecting to corp wifi, no password prompt, just fails. guest wifi works",
   "CORP-WIFI not working on my macbook since monday, IT said it uses certificates? dunno"],
  "EAP-TLS on {h} is failing because the device certificate has expired or was never enrolled (check NotAfter/issuer in the machine or user store), or the device does not trust the RADIUS server cert. Re-enroll the certificate via MDM (Intune sync / Jamf SCEP profile), update trusted roots if the RADIUS log says 'unknown CA', and confirm Access-Accept.",
  ("SEV3", "Wi-Fi authentication failures for devices like {h}", "About 60 laptops whose certificates missed auto-renewal lost corporate Wi-Fi on the same day."),
  ("after the radius server cert was replaced last night, hundreds of laptops can't join CORP-WIFI. FreeRADIUS says TLS Alert read:fatal:unknown CA",
   "'unknown CA' from clients across the fleet right after the RADIUS certificate replacement means the devices do not trust the new server certificate chain. Escalate to Network Engineering on-call (wireless/RADIUS) to roll back the server certificate or push the new trusted root to the Wi-Fi profiles."))

A(N, "Duplicate IP address conflict",
  ["Windows: 'Windows has detected an IP address conflict' / event 4199 in System log (Tcpip)",
   "Linux: `arping -D -I eth0 10.20.5.44` returns a reply (address in use)",
   "Intermittent connectivity: ARP entry for the IP flips between two MAC addresses (`show ip arp 10.20.5.44`)"],
  "Two devices use the same IP, usually a statically configured device inside a DHCP pool or a cloned VM, so the gateway's ARP entry alternates between their MAC addresses.",
  ["Find both MACs: `show ip arp 10.20.5.44` repeatedly or `arp -a` / `ip neigh`, and on Windows check event 4199 which names the conflicting MAC.",
   "Locate the ports: `show mac address-table address <mac>` and follow to the access port.",
   "Decide which device owns the address (IPAM/DHCP reservation); reconfigure the other one or create a DHCP exclusion for the static range.",
   "For cloned VMs regenerate the MAC/IP; then clear the ARP entry `clear ip arp 10.20.5.44`."],
  "The conflicting MAC belongs to network infrastructure or a device in a location you cannot access.",
  "ip-conflict arp duplicate-ip dhcp network",
  ["10.20.5.44", "10.20.8.17", "10.30.1.250"],
  ["my PC keeps saying IP address conflict and the network drops every few minutes",
   "printer at {h} goes offline randomly. someone said another device has its IP?"],
  "Find the two MACs fighting over {h} with `show ip arp`/event 4199 and locate them via `show mac address-table address <mac>`. Keep the device that owns the address in IPAM, re-address the other (or add a DHCP exclusion for static ranges), then `clear ip arp` on the gateway.",
  ("SEV4", "Duplicate IP {h} on production VLAN", "A cloned VM took over a printer server's address and printing failed for a floor for 2 hours."))

A(N, "Interface CRC errors and slow link (duplex mismatch / bad cabling)",
  ["`show interfaces Gi1/0/5` shows rising 'input errors, CRC' and 'late collision' counters",
   "Host reports 100Mb/s half duplex while the switch is 1000/full (or vice versa)",
   "%CDP-4-DUPLEX_MISMATCH: duplex mismatch discovered on GigabitEthernet1/0/5 (not half duplex)"],
  "One side is hard-coded speed/duplex while the other auto-negotiates (falls back to half duplex), or the cable/patch/SFP is faulty, causing CRC errors and retransmissions.",
  ["Check counters and negotiated settings: `show interfaces Gi1/0/5 | include duplex|CRC|collision` and on Linux `ethtool eth0`.",
   "Set both ends to auto (`speed auto`, `duplex auto`; Linux `ethtool -s eth0 autoneg on`) or hard-code BOTH ends identically.",
   "Clear counters (`clear counters Gi1/0/5`) and watch whether CRCs keep increasing.",
   "If CRCs continue with matching duplex, replace the patch cable, then the SFP; run `test cable-diagnostics tdr interface Gi1/0/5`."],
  "CRC errors persist after cable and SFP replacement (possible switch port/ASIC or in-wall cabling fault needing on-site work).",
  "duplex crc interface cabling switch network",
  ["sw-2f-access-01", "sw-dc-tor-07", "sw-lab-04"],
  ["network is super slow only at my desk, file copies run at 2MB/s. port on {h} maybe?",
   "backup server on {h} transfers are really slow, the switch port shows lots of CRC errors"],
  "Check `show interfaces <port> | include duplex|CRC|collision` on {h} and `ethtool` on the host: a duplex mismatch or bad cable causes CRC errors and slow transfers. Set both ends to auto (or both hard-coded identically), clear counters, and if CRCs continue replace the cable/SFP and run TDR cable diagnostics.",
  ("SEV4", "Degraded throughput from CRC errors on {h}", "Nightly backups from one rack took 9 hours instead of 2 due to a failing patch cable."))

A(N, "OSPF neighbor stuck in EXSTART/EXCHANGE (MTU mismatch)",
  ["`show ip ospf neighbor` shows the neighbor stuck in EXSTART/DR or EXCHANGE",
   "%OSPF-5-ADJCHG: Process 1, Nbr 10.0.0.2 on GigabitEthernet0/1 from EXSTART to DOWN, Neighbor Down: Too many retransmissions",
   "Routes from the neighbor's area missing"],
  "The interface MTUs differ on the two sides, so Database Description packets from the larger-MTU side are rejected and the adjacency never progresses past EXSTART/EXCHANGE.",
  ["Compare MTUs: `show ip ospf interface Gi0/1 | include MTU` / `show interfaces Gi0/1 | include MTU` on both routers.",
   "Set identical MTU on both ends (`mtu 9000` or `ip mtu 1500`) — preferred.",
   "Only as a temporary workaround: `ip ospf mtu-ignore` on the interface.",
   "Verify with `show ip ospf neighbor` that the state reaches FULL and routes appear in `show ip route ospf`."],
  "One side is a provider-managed device or the MTU change affects a production core link requiring a change window.",
  "ospf mtu adjacency exstart routing network",
  ["core-rtr-03", "dist-sw-02", "branch-rtr-lon"],
  ["OSPF between {h} and the new firewall stays in EXSTART, routes not learned",
   "after enabling jumbo frames on {h} we lost the OSPF neighbour to the core"],
  "An adjacency stuck in EXSTART/EXCHANGE is almost always an MTU mismatch; compare `show ip ospf interface | include MTU` on {h} and its neighbor. Set identical MTUs on both ends (use `ip ospf mtu-ignore` only as a temporary workaround) and confirm the neighbor reaches FULL and OSPF routes return.",
  ("SEV3", "OSPF adjacency down on {h} after jumbo-frame change", "Branch lost its primary path for 40 minutes and ran on the LTE backup link."))

# ---------------------------------------------------------------------------
# SECURITY
# ---------------------------------------------------------------------------

A(S, "Public TLS certificate expired",
  ["Browsers show 'Your connection is not private' NET::ERR_CERT_DATE_INVALID",
   "curl: (60) SSL certificate problem: certificate has expired",
   "`openssl s_client -connect shop.example.com:443 -servername shop.example.com </dev/null | openssl x509 -noout -dates` shows notAfter in the past"],
  "The certificate served by the endpoint passed its notAfter date because renewal failed or the renewed certificate was never deployed/reloaded on every endpoint (load balancer, CDN, ingress).",
  ["Confirm what is served: `openssl s_client -connect shop.example.com:443 -servername shop.example.com </dev/null 2>/dev/null | openssl x509 -noout -subject -issuer -dates`.",
   "Check whether a renewed certificate already exists: `certbot certificates` (Let's Encrypt) or the CA/ACM console; if not, renew: `certbot renew --cert-name shop.example.com`.",
   "Deploy/reload on every termination point: `nginx -t && systemctl reload nginx`; for AWS, `aws acm describe-certificate` / re-import and update the listener; for Kubernetes, update the TLS secret.",
   "Re-run the openssl check against each endpoint IP behind the name (`dig +short shop.example.com`) to confirm the new notAfter.",
   "Add the host to certificate-expiry monitoring (alert at 30 and 14 days)."],
  "The certificate is issued by a commercial CA requiring an organisation-validated reissue, or the expired cert is on a customer-facing payment domain (treat as an incident).",
  "certificate tls expiry ssl certbot security",
  ["shop.example.com", "status.example.com", "api.partner.example.com", "grafana.corp.example.com"],
  ["{h} shows a big red 'your connection is not private' warning. are we hacked??",
   "customers report certificate error on {h}: NET::ERR_CERT_DATE_INVALID",
   "monitoring: curl to https://{h} fails 'certificate has expired'"],
  "Confirm with `openssl s_client -connect {h}:443 -servername {h} | openssl x509 -noout -dates` that the served certificate is past notAfter. Renew it (`certbot renew --cert-name {h}` or reissue in the CA/ACM), deploy and reload it on every termination point (nginx reload, LB listener, Kubernetes TLS secret), re-check each endpoint IP and add the name to expiry monitoring.",
  ("SEV2", "Expired TLS certificate on {h}", "Customers saw certificate warnings for 47 minutes; conversion dropped by 60% during the window."),
  ("the certificate on our payment page checkout.example.com expired an hour ago, customers can't pay. it's a DigiCert OV cert, not letsencrypt",
   "An expired certificate on a customer-facing payment domain is an incident, and an OV certificate from a commercial CA needs an organisation-validated reissue. Escalate to Security Operations / the PKI owner to declare an incident and expedite the DigiCert reissue, then deploy it to every endpoint and verify with openssl s_client."))

A(S, "certbot renewal fails (HTTP-01 challenge)",
  ["certbot renew: 'Challenge failed for domain git.example.com' / 'Some challenges have failed.'",
   "Detail: 'Invalid response from http://git.example.com/.well-known/acme-challenge/<token>: 404'",
   "Detail: 'Timeout during connect (likely firewall problem)'"],
  "Let's Encrypt could not fetch the HTTP-01 token from port 80: the port is blocked, a redirect/rewrite or reverse proxy does not serve /.well-known/acme-challenge/ from the webroot, or DNS points to another server.",
  ["Dry-run to see the exact error: `certbot renew --dry-run --cert-name git.example.com`.",
   "Check the renewal config: `cat /etc/letsencrypt/renewal/git.example.com.conf` (authenticator, webroot_path).",
   "Verify port 80 is reachable from the internet and DNS A/AAAA records point to this server (a stale AAAA record is a common cause).",
   "Ensure the web server serves the challenge path: `location ^~ /.well-known/acme-challenge/ { root /var/www/letsencrypt; }` before any HTTPS redirect; test with a file placed there and `curl http://git.example.com/.well-known/acme-challenge/test`.",
   "If port 80 cannot be opened, switch to DNS-01 (`certbot certonly --dns-route53 -d git.example.com`).",
   "Check the timer: `systemctl list-timers | grep certbot`."],
  "Renewal keeps failing within 7 days of expiry, or the domain's DNS is managed by a third party for DNS-01.",
  "certbot letsencrypt acme certificate renewal security",
  ["git.example.com", "wiki.example.com", "vault.example.com"],
  ["got an email from Let's Encrypt that {h} expires in 10 days. renewal cron runs but fails with 404 on acme-challenge",
   "certbot renew --dry-run says Timeout during connect (likely firewall problem) for {h}"],
  "Run `certbot renew --dry-run --cert-name {h}` to see the failing challenge: a 404 means /.well-known/acme-challenge/ is not served from the webroot (fix the location block before the HTTPS redirect), a timeout means port 80 or DNS/AAAA records are wrong. Fix that and re-run the dry-run, or switch to DNS-01 if port 80 cannot be opened, then check the certbot timer.",
  ("SEV4", "Let's Encrypt renewal failing for {h}", "Renewal had failed silently for 3 weeks; caught 6 days before expiry by the monitoring email."))

A(S, "Clients reject certificate: incomplete chain ('unable to verify the first certificate')",
  ["Node.js: Error: unable to verify the first certificate (UNABLE_TO_VERIFY_LEAF_SIGNATURE)",
   "curl: (60) SSL certificate problem: unable to get local issuer certificate — but browsers work",
   "`openssl s_client -connect api.example.com:443 -servername api.example.com -showcerts` shows only one certificate ('Certificate chain 0 s:...')"],
  "The server sends only the leaf certificate without the intermediate CA; browsers often fill the gap via AIA fetching or cache, but most non-browser clients fail.",
  ["Check what is sent: `openssl s_client -connect api.example.com:443 -servername api.example.com -showcerts </dev/null` — count certificates in the chain.",
   "Configure the full chain: NGINX `ssl_certificate /etc/letsencrypt/live/api.example.com/fullchain.pem;` (not cert.pem); Apache 2.4.8+ uses a combined file in SSLCertificateFile.",
   "For other CAs build it: `cat api.example.com.crt intermediate.crt > fullchain.crt` (leaf first).",
   "Reload (`nginx -t && systemctl reload nginx`) and verify with `openssl s_client ... -verify_return_error` or SSL Labs.",
   "Do not tell clients to disable verification (NODE_TLS_REJECT_UNAUTHORIZED=0)."],
  "The endpoint is a vendor-managed appliance or SaaS where we cannot change the served chain.",
  "certificate chain intermediate tls nginx security",
  ["api.example.com", "hooks.example.com", "sftp.example.com"],
  ["our integration can't call {h}: 'unable to verify the first certificate'. chrome says the cert is fine though",
   "python requests to {h} fails CERTIFICATE_VERIFY_FAILED unable to get local issuer certificate. I think python is broken"],
  "{h} is sending only the leaf certificate without the intermediate; confirm with `openssl s_client -connect {h}:443 -servername {h} -showcerts`. Configure the full chain (NGINX `ssl_certificate .../fullchain.pem`, leaf first), reload, and verify with `openssl s_client -verify_return_error`; do not disable verification on clients.",
  ("SEV3", "Missing intermediate certificate on {h}", "Partner webhook deliveries failed for 5 hours after a certificate replacement deployed cert.pem instead of fullchain.pem."))

A(S, "Certificate name mismatch (NET::ERR_CERT_COMMON_NAME_INVALID)",
  ["Browser: NET::ERR_CERT_COMMON_NAME_INVALID",
   "curl: (60) SSL: no alternative certificate subject name matches target host name 'portal.example.com'",
   "Java: javax.net.ssl.SSLPeerUnverifiedException: Certificate for <portal.example.com> doesn't match any of the subject alternative names"],
  "The served certificate's Subject Alternative Names do not include the requested hostname — a new alias/CNAME was added without reissuing, a wildcard was used for a second-level subdomain (*.example.com does not cover a.b.example.com), or SNI selects the wrong default certificate.",
  ["List SANs: `openssl s_client -connect portal.example.com:443 -servername portal.example.com </dev/null | openssl x509 -noout -ext subjectAltName`.",
   "Compare without SNI (`openssl s_client -connect ip:443`) to see whether the server falls back to a default cert because the server_name/vhost is missing.",
   "Fix the vhost (`server_name portal.example.com;`) or reissue the certificate with the missing SAN (`certbot --expand -d example.com -d portal.example.com`).",
   "Reload and re-verify the SAN list."],
  "The hostname belongs to a domain we do not control or requires a commercial CA reissue.",
  "certificate san hostname sni tls security",
  ["portal.example.com", "login.example.com", "files.example.com"],
  ["new URL {h} gives a privacy error saying the certificate is for a different site",
   "our java client fails with 'doesn't match any of the subject alternative names' calling {h}"],
  "The certificate served for {h} does not list that name in its SANs (check with `openssl x509 -noout -ext subjectAltName`), or SNI falls back to a default certificate because the vhost is missing. Add the correct `server_name`/vhost or reissue the certificate with the missing SAN (e.g. `certbot --expand`), reload and re-check.",
  ("SEV3", "Certificate name mismatch on {h}", "A marketing launch URL showed certificate errors for its first 2 hours."))

A(S, "Internal mTLS failing: client certificate expired",
  ["Go service log: remote error: tls: bad certificate / tls: failed to verify certificate: x509: certificate has expired or is not yet valid",
   "Envoy/Istio: 'upstream connect error or disconnect/reset before headers. reset reason: connection failure, transport failure reason: TLS error: 268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED'",
   "Only calls between specific services fail, starting at an exact time"],
  "A client or server certificate used for mutual TLS reached notAfter — typically a manually issued long-lived certificate outside the automated issuer — or a host clock is wrong so a valid cert appears 'not yet valid'.",
  ["Inspect the certificate in use: `openssl x509 -in /etc/app/tls/client.crt -noout -dates -subject` or for Kubernetes `kubectl get secret app-mtls -o jsonpath='{.data.tls\\.crt}' | base64 -d | openssl x509 -noout -dates`.",
   "Check host time with `timedatectl` to rule out clock skew.",
   "Reissue from the internal CA (e.g. `vault write pki_int/issue/service common_name=orders.svc.corp ttl=720h`) or trigger cert-manager renewal (`cmctl renew app-mtls`).",
   "Restart or hot-reload the service so it picks up the new certificate; verify with `openssl s_client -connect orders:8443 -cert client.crt -key client.key`.",
   "Move the certificate to automated issuance and add expiry alerting."],
  "The internal CA itself (root/intermediate) has expired or must be reissued.",
  "mtls certificate x509 expired istio vault security",
  ["orders-svc", "payments-gateway", "ledger-api"],
  ["{h} calls to ledger started failing at 00:00 exactly with 'x509: certificate has expired or is not yet valid'. did someone deploy?",
   "istio sidecar on {h} says CERTIFICATE_VERIFY_FAILED, nothing changed on our side"],
  "A certificate used for mutual TLS by {h} has passed notAfter (or the host clock is wrong); inspect it with `openssl x509 -noout -dates` and check `timedatectl`. Reissue it from the internal CA (Vault PKI or `cmctl renew`), reload the service, verify with `openssl s_client -cert/-key`, and move it to automated issuance with expiry alerts.",
  ("SEV2", "mTLS failures between {h} and its dependencies", "Order processing stopped for 38 minutes when a manually issued client certificate expired at midnight."),
  ("all mTLS between services fails since 00:00, every cert signed by our Issuing CA 2 fails validation, the intermediate itself shows notAfter yesterday",
   "An expired internal intermediate CA breaks every certificate it signed, so reissuing individual leaf certificates will not help. Escalate immediately to Security Operations / PKI owners to reissue the intermediate and redistribute the chain, and declare an incident."))

A(S, "cert-manager Certificate stuck not Ready",
  ["`kubectl get certificate -n web` shows READY False for hours",
   "`kubectl describe certificate` event: 'Issuing certificate as Secret does not exist' and the Order stays pending",
   "`kubectl get challenges -A` shows 'Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200''"],
  "The ACME challenge cannot be completed: the HTTP-01 solver ingress is not reachable (wrong ingressClass, DNS not yet pointing at the ingress), or the DNS-01 solver lacks permissions on the hosted zone.",
  ["Walk the chain: `kubectl describe certificate <name> -n web`, then `kubectl describe certificaterequest`, `kubectl describe order`, `kubectl describe challenge`.",
   "For HTTP-01, check the solver ingress exists and uses the right class (`kubectl get ingress -n web | grep cm-acme-http-solver`) and that `curl http://<domain>/.well-known/acme-challenge/<token>` works from outside.",
   "For DNS-01, check the issuer's credentials (e.g. Route 53 role needs route53:ChangeResourceRecordSets and route53:GetChange) and cert-manager logs: `kubectl logs -n cert-manager deploy/cert-manager`.",
   "After fixing, delete the failed challenge/order or run `cmctl renew <name> -n web` to retry.",
   "Check Let's Encrypt rate limits ('too many certificates already issued') before retrying repeatedly."],
  "Let's Encrypt rate limits were hit for a production domain or the ClusterIssuer configuration must be changed cluster-wide.",
  "cert-manager kubernetes acme certificate ingress security",
  ["web/shop-tls", "api/api-tls", "docs/docs-tls"],
  ["certificate {h} is not Ready for 3 hours, site still shows the fake ingress cert",
   "cert-manager won't issue {h}. challenge says wrong status code 404 expected 200"],
  "Trace {h} through Certificate → CertificateRequest → Order → Challenge with `kubectl describe`; a 404 on HTTP-01 means the solver ingress is unreachable or has the wrong ingress class, and DNS-01 failures are usually missing Route 53 permissions. Fix that, then retry with `cmctl renew` (watching Let's Encrypt rate limits).",
  ("SEV4", "cert-manager unable to issue {h}", "A new service launched with the default ingress certificate and browser warnings for half a day."))

A(S, "Java 'PKIX path building failed' calling an HTTPS service",
  ["javax.net.ssl.SSLHandshakeException: PKIX path building failed: sun.security.provider.certpath.SunCertPathBuilderException: unable to find valid certification path to requested target",
   "Works with curl on the same host, fails only from the Java application",
   "Started after the target switched to a certificate from a new (internal or private) CA"],
  "The JVM uses its own truststore ($JAVA_HOME/lib/security/cacerts or one passed via -Djavax.net.ssl.trustStore) that does not contain the issuing CA of the server certificate, e.g. the internal root CA.",
  ["Find which truststore the app uses: check JVM flags (`ps -ef | grep trustStore`) or the default `$JAVA_HOME/lib/security/cacerts`.",
   "Get the issuing CA: `openssl s_client -connect svc.corp.example.com:443 -showcerts </dev/null` and save the root/intermediate PEM.",
   "Import the CA (not the leaf): `keytool -importcert -cacerts -alias corp-root-2025 -file corp-root.pem` (Java 9+) or `keytool -importcert -keystore /path/truststore.jks -alias corp-root-2025 -file corp-root.pem`.",
   "Restart the JVM; for containers bake the CA into the image so it survives rebuilds.",
   "Debug if still failing: `-Djavax.net.debug=ssl:handshake`."],
  "The server presents an incomplete or invalid chain that must be fixed by the service owner.",
  "java pkix truststore keytool certificate security",
  ["billing-batch", "crm-sync", "reporting-svc"],
  ["{h} fails with PKIX path building failed since the LDAP server got a new cert. curl works",
   "java app {h} can't call the new internal API - SSLHandshakeException unable to find valid certification path"],
  "The JVM truststore used by {h} does not contain the CA that issued the server certificate. Extract the issuing root/intermediate with `openssl s_client -showcerts`, import it with `keytool -importcert -cacerts -alias <name> -file ca.pem` (or into the configured truststore), restart the JVM and bake the CA into the image.",
  ("SEV3", "{h} unable to call internal HTTPS services", "A nightly batch failed after an internal CA migration; invoices were sent one day late."))

A(S, "User locked out of MFA (lost or replaced phone)",
  ["User cannot complete sign-in: Okta 'Verify with Okta Verify' push never arrives / Microsoft 'Approve sign in request' on old device",
   "User bought a new phone and did not transfer the authenticator app",
   "Entra ID sign-in log: 'Strong Authentication is required' (AADSTS50076/50079) followed by failed MFA"],
  "The user's registered MFA factor is bound to a device they no longer have; without a backup method they cannot satisfy MFA.",
  ["Verify identity out of band before any reset: video call with photo ID or manager confirmation via a known channel — never based on an inbound call/email alone.",
   "Okta: Admin > Directory > People > user > 'Reset Multifactor' (or API `POST /api/v1/users/{id}/lifecycle/reset_factors`).",
   "Entra ID: user > Authentication methods > 'Require re-register multifactor authentication' and delete old methods, or issue a Temporary Access Pass (`New-MgUserAuthenticationTemporaryAccessPassMethod -UserId jdoe@example.com -BodyParameter @{lifetimeInMinutes=60; isUsableOnce=$true}`).",
   "Have the user enrol the new device immediately and register a second method (FIDO2 key or second phone).",
   "Record the verification evidence in the ticket."],
  "Identity cannot be verified, the request comes via an unusual channel or urgency pressure, or the account is privileged (admin) — hand to Security.",
  "mfa lockout okta entra authenticator identity security",
  ["jdoe", "mchen", "a.kowalski", "rgupta"],
  ["got a new phone, now I can't log in because the authenticator app is on the old one. I wiped it already :(",
   "hi, it's {h}. lost my phone on holiday, can't get past MFA. can you reset it?",
   "MFA push doesn't come anymore since I switched from android to iphone"],
  "Verify {h}'s identity out of band (video call with ID or manager confirmation through a known channel) before touching factors. Then reset MFA (Okta 'Reset Multifactor' or Entra 'Require re-register MFA' / Temporary Access Pass), have the user enrol the new device plus a second method, and record the verification evidence.",
  ("SEV4", "MFA reset backlog after device migration", "About 70 users were unable to log in on the day of a company phone swap; helpdesk queue reached 3 hours."),
  ("URGENT this is the CFO's assistant. the CFO is travelling and needs MFA removed from her account right now for a wire transfer, she can't take calls. please just disable it",
   "An urgent MFA removal request for an executive through a third party, with no way to verify identity, matches the social-engineering pattern and the account is high-value. Do not reset anything; escalate to Security Operations (SOC) for identity verification and possible BEC investigation."))

A(S, "Unexpected MFA push notifications (MFA fatigue)",
  ["User receives repeated 'Approve sign-in?' pushes they did not initiate, often at night",
   "Okta System Log: user.authentication.auth_via_mfa with outcome DENY from an unfamiliar IP/country",
   "Entra sign-in logs: successful primary authentication (password correct) followed by MFA denied"],
  "Someone has the user's correct password (phishing, reuse or breach) and is triggering push prompts hoping the user approves one.",
  ["Tell the user to deny all prompts and not approve any; ask whether they approved one already.",
   "Reset the password and revoke sessions: Entra `Revoke-MgUserSignInSession -UserId jdoe@example.com` / Okta 'Clear User Sessions'.",
   "Review sign-in logs for the source IPs and whether any push was approved (successful sign-in from the attacker IP).",
   "Enable number matching / Okta Verify with number challenge and consider phishing-resistant FIDO2 for the user.",
   "Open a security incident if any prompt was approved."],
  "The user approved a prompt or logs show a successful sign-in from the attacker's IP — treat as account compromise.",
  "mfa push fatigue account-compromise phishing identity security",
  ["jdoe", "lmartin", "p.novak"],
  ["my phone keeps buzzing with login approvals I didn't request, like 15 of them last night. is the app broken?",
   "getting microsoft authenticator popups at 3am, I press deny. weird bug?"],
  "Repeated unsolicited push prompts mean someone has the user's password: tell {h} to deny everything, reset the password and revoke all sessions (`Revoke-MgUserSignInSession` / Okta Clear User Sessions), and review sign-in logs for the attacker IP and any approved prompt. Enable number matching or FIDO2 for the user.",
  ("SEV3", "MFA fatigue attack against {h}", "Attacker triggered 40 push prompts overnight using a reused password; none approved, password reset within 20 minutes."),
  ("I kept getting approve requests and I think I accidentally hit approve on one around 2am... now there's an inbox rule I didn't create",
   "An approved push followed by a new inbox rule means the account is compromised. Revoke sessions and reset the password immediately, then escalate to Security Operations (SOC) as an account-compromise incident for investigation of mailbox access and the malicious rule."))

A(S, "Active Directory account repeatedly locked out",
  ["'The referenced account is currently locked out and may not be logged on to'",
   "Domain controller Security log Event ID 4740 'A user account was locked out' with Caller Computer Name",
   "User unlocks, works for a few minutes, then is locked again"],
  "A device or service keeps authenticating with an old password — a mapped drive, scheduled task, Outlook on a phone, saved RDP credentials or a service running as the user — and exceeds the lockout threshold.",
  ["Check status: `Get-ADUser jdoe -Properties LockedOut,BadLogonCount,LastBadPasswordAttempt,PasswordLastSet`.",
   "Find the source: on the PDC emulator `Get-WinEvent -FilterHashtable @{LogName='Security';Id=4740} | Where {$_.Properties[0].Value -eq 'jdoe'} | Select TimeCreated,@{n='Caller';e={$_.Properties[1].Value}}`.",
   "On the caller computer, look for 4625 events and remove stale credentials (Credential Manager `cmdkey /list`, scheduled tasks, services, mobile mail profile).",
   "Unlock: `Unlock-ADAccount -Identity jdoe`.",
   "If the caller is an unknown external host (e.g. Exchange/ADFS from internet IPs), treat as password spraying."],
  "Lockout sources are external IPs (password spraying/brute force) or many accounts are locking simultaneously.",
  "active-directory lockout password 4740 identity security",
  ["jdoe", "svc-backup", "a.kowalski"],
  ["my account locks every 20 minutes since I changed my password on monday",
   "{h} keeps getting locked out, the nightly job fails too"],
  "Find the device still using {h}'s old password: event 4740 on the PDC emulator gives the Caller Computer Name, and 4625 events plus `cmdkey /list`, scheduled tasks, services and phone mail profiles on that machine show the stale credential. Remove/update it, then `Unlock-ADAccount -Identity {h}`.",
  ("SEV4", "Repeated lockout of {h}", "A service account locked 30 times in a day due to a stale scheduled task, breaking nightly file transfers."),
  ("my account AND 3 colleagues keep locking out this morning, event 4740 caller is our ADFS server and the logs show logins from IPs in another country",
   "Multiple accounts locking via ADFS from foreign IPs is a password-spraying attack, not stale credentials. Escalate to Security Operations (SOC) immediately to block the source IPs and investigate; do not just unlock the accounts repeatedly."))

A(S, "Expired password blocks access (password reset)",
  ["'Your password has expired and must be changed' at login / VPN client 'password expired'",
   "Linux: 'WARNING: Your password has expired. You must change your password now and login again!'",
   "Remote users cannot change an expired password over VPN because the VPN requires the password"],
  "The password passed its maximum age; remote users often cannot use the Windows change dialog without line-of-sight to a DC, and some apps simply fail with a generic error.",
  ["Direct the user to self-service password reset (e.g. https://passwordreset.microsoftonline.com or Okta 'Forgot password') which verifies MFA.",
   "If SSPR is not possible, verify identity out of band and reset: `Set-ADAccountPassword -Identity jdoe -Reset -NewPassword (Read-Host -AsSecureString)` and `Set-ADUser jdoe -ChangePasswordAtLogon $true`.",
   "For Linux local accounts check `chage -l jdoe` and set a new password with `passwd jdoe` (or adjust policy `chage -M 90 jdoe`).",
   "After reset, have the user update the password on all devices (phone mail, Wi-Fi) to avoid lockouts.",
   "Never send passwords by email or chat in clear text."],
  "The user cannot be verified or the account is a shared/service account whose password change would break applications.",
  "password reset expiry sspr active-directory identity security",
  ["jdoe", "t.williams", "svc-reporting"],
  ["it says my password expired and I'm working from home, VPN won't let me in",
   "pls reset password for {h}, it expired while on leave"],
  "Send {h} to self-service password reset (which verifies MFA); if that is not possible, verify identity out of band and reset with `Set-ADAccountPassword -Reset` plus `-ChangePasswordAtLogon $true` (or `chage`/`passwd` for Linux accounts). Remind the user to update the password on all devices to avoid lockouts.",
  ("SEV4", "Expired password blocked remote access for {h}", "A remote user was unable to work for a day because the password expired while on leave."),
  ("password for svc-erp-sql expired, please reset it. it's the account the ERP integration uses to connect to SQL",
   "Service accounts used by applications cannot simply be reset: the ERP integration would break as soon as the password changes. Escalate to the application owner and Identity & Access Management to coordinate a rotation (ideally move it to a managed service account or vault) rather than resetting it blindly."))

A(S, "SAML SSO fails after IdP signing certificate rotation",
  ["App error: 'Invalid SAML Response: Signature validation failed. SAML Response rejected'",
   "Shibboleth/SimpleSAMLphp: 'Unable to validate Signature' / 'The signature on the assertion is invalid'",
   "All users fail to log in to one app at the same time; other SSO apps work"],
  "The identity provider rolled over its token-signing certificate and the service provider still trusts only the old certificate (metadata not refreshed).",
  ["Confirm which certificate signs the response: capture it with SAML-tracer and compare the X509Certificate with the SP's configured IdP cert (`openssl x509 -noout -fingerprint -sha256`).",
   "Download fresh IdP metadata (Entra: Enterprise app > Single sign-on > Federation Metadata XML; Okta: app > Sign On > Identity Provider metadata) and upload it or the new certificate to the SP.",
   "Where supported, configure the SP to consume the metadata URL automatically.",
   "If the SP cannot be updated immediately, re-activate the previous certificate on the IdP (Entra keeps inactive certs) as a rollback.",
   "Test login in a private browser window."],
  "The SP is a vendor-hosted SaaS where only the vendor can update the IdP certificate.",
  "sso saml certificate idp signing identity security",
  ["expenses.example.com", "wiki.example.com", "hr-portal"],
  ["nobody can log into {h} via SSO since this morning: 'Signature validation failed. SAML Response rejected'",
   "SSO to {h} broken for everyone, I think our Okta is down"],
  "The IdP has rotated its signing certificate and {h} still trusts the old one; compare certificate fingerprints from a SAML-tracer capture. Upload the fresh IdP metadata/certificate to the SP (or configure the metadata URL), or re-activate the previous IdP certificate as a rollback, then test login in a private window.",
  ("SEV2", "SSO outage for {h} after IdP certificate rollover", "All 1,100 users were unable to log in to the application for 75 minutes."))

A(S, "SAML assertion rejected: clock skew ('NotBefore' / 'not yet valid')",
  ["'SAML Response is not valid: The response was received at 10:02:01 instead of 10:04:33 (NotBefore)'",
   "Error: 'Assertion is not yet valid' / 'NotOnOrAfter condition not met'",
   "Only one SP server behind the load balancer rejects logins (intermittent SSO failure)"],
  "The service provider's clock differs from the IdP's by more than the allowed skew (often 60-180 s), so it considers the assertion not yet valid or already expired; usually NTP stopped on one SP node.",
  ["Check time on each SP node: `timedatectl` and `chronyc tracking` (look at 'System time' offset).",
   "Fix NTP: `systemctl restart chronyd` and `chronyc makestep` to step the clock; make sure the NTP servers are reachable (`chronyc sources -v`).",
   "Optionally allow a small skew in the SP (e.g. 120 s) — do not set large tolerances.",
   "Retry login against each node and confirm the error stops."],
  "NTP is broken across many hosts or the IdP clock itself is wrong.",
  "sso saml clock-skew ntp identity security",
  ["crm-web-02", "wiki-app-01", "jira-node-3"],
  ["SSO login to the crm fails for me every second time with 'Assertion is not yet valid'",
   "SAML error NotBefore on {h} only, other nodes fine"],
  "The SP node {h} has drifted from the IdP clock beyond the allowed skew, so assertions look not-yet-valid. Check `timedatectl`/`chronyc tracking`, fix NTP and step the clock with `chronyc makestep`, and only allow a small (about 120 s) skew in the SP.",
  ("SEV3", "Intermittent SSO failures from clock drift on {h}", "Roughly half of CRM logins failed for a morning because one node drifted 6 minutes."))

A(S, "Entra ID sign-in error AADSTS50011 (reply URL mismatch)",
  ["'AADSTS50011: The redirect URI 'https://app.example.com/signin-oidc' specified in the request does not match the redirect URIs configured for the application'",
   "Login works on the old hostname but not on a new domain/path or behind a new reverse proxy",
   "App generates http:// instead of https:// redirect URI behind TLS offload"],
  "The redirect (reply) URI sent by the application is not registered on the Entra app registration, commonly after a hostname change, an added path, or a proxy that makes the app build an http:// URI.",
  ["Read the exact URI from the error page (it is quoted in the message).",
   "Compare with the app registration: `az ad app show --id <appId> --query web.redirectUris`.",
   "Add the correct URI: `az ad app update --id <appId> --web-redirect-uris https://app.example.com/signin-oidc https://old.example.com/signin-oidc`.",
   "If the app produces http:// behind a proxy, configure forwarded headers (ASP.NET Core `UseForwardedHeaders` with X-Forwarded-Proto) instead of registering http URIs.",
   "Retry login."],
  "The app registration is owned by another tenant/vendor (multi-tenant SaaS) and cannot be edited by us.",
  "entra azure-ad oidc redirect-uri aadsts sso identity security",
  ["app.example.com", "timesheets.example.com", "grafana.corp.example.com"],
  ["microsoft login error AADSTS50011 when I go to {h}. redirect uri does not match",
   "after we moved the app behind the new proxy, SSO says redirect URI http://{h}/signin-oidc doesn't match"],
  "The redirect URI that {h} sends is not registered on the Entra app registration; take the exact URI from the AADSTS50011 message and compare with `az ad app show --id <appId> --query web.redirectUris`. Add the correct https URI (`az ad app update --web-redirect-uris ...`), and if the app builds http:// behind a proxy, fix forwarded headers instead of registering http.",
  ("SEV3", "SSO broken for {h} after domain change", "Users could not log in to the app for 2 hours following a hostname migration."))

A(S, "Sign-in blocked by Conditional Access (AADSTS53003 / 53000)",
  ["'AADSTS53003: Access has been blocked by Conditional Access policies. The access policy does not allow token issuance.'",
   "'AADSTS53000: Device is not in required device state: compliant'",
   "User can sign in on the corporate laptop but not from a personal device or a new phone"],
  "A Conditional Access policy requires a compliant/hybrid-joined device, an allowed location or an approved client app, and the sign-in does not meet it.",
  ["In Entra sign-in logs, open the failure and read the 'Conditional Access' tab to see which policy failed and why.",
   "If device compliance is required, check the device in Intune (Devices > All devices > compliance state) and have the user sync/remediate (`Company Portal > Check status`).",
   "For a new phone, enrol it in Intune or use the approved app (Outlook mobile) as the policy requires.",
   "Use the What If tool (Entra > Conditional Access > What If) to confirm the user would pass after remediation.",
   "Do not exclude users from policies to 'fix' access without Security approval."],
  "The user needs an exception to a Conditional Access policy or the policy is blocking many users unexpectedly.",
  "conditional-access entra aadsts intune compliance identity security",
  ["jdoe", "contractor-akim", "s.olsen"],
  ["can't open outlook on my new iphone: 'Access has been blocked by Conditional Access policies'",
   "AADSTS53000 device is not in required device state when {h} logs in from home PC"],
  "The sign-in log's Conditional Access tab will show which policy blocked {h} (e.g. compliant device or approved app required). Enrol/remediate the device in Intune or use the approved client app, confirm with the What If tool, and do not exclude users from policies without Security approval.",
  ("SEV3", "Conditional Access rollout blocked mobile mail", "A new compliance policy blocked 250 unenrolled phones from email for half a day."),
  ("our external auditors (guest accounts) all get AADSTS53003 since yesterday's policy change. please just exclude them from the policy",
   "Excluding users from a Conditional Access policy is a security exception that the helpdesk must not grant, and a whole group failing after a policy change may mean the policy is misscoped. Escalate to Security Operations / Identity & Access Management to review the policy and any guest exception."))

A(S, "Reported phishing email: triage and purge",
  ["User forwards a suspicious email: 'Your mailbox is full, verify your account' with a link to a look-alike domain",
   "Email headers show `Authentication-Results: spf=fail` or `dmarc=fail` for a spoofed internal sender",
   "Several users received the same message within minutes"],
  "A phishing campaign reached inboxes because the sender, link or attachment was not yet known to the mail filter, or a look-alike domain passed authentication.",
  ["Analyse the original (.eml with headers): sender, Return-Path, Authentication-Results (SPF/DKIM/DMARC), links (expand without clicking, e.g. `curl -sI`) and attachment hashes.",
   "Find all recipients and purge: Microsoft 365 `New-ComplianceSearch -Name phish-0412 -ExchangeLocation All -ContentMatchQuery 'subject:\"Your mailbox is full\" AND from:alerts@micros0ft-support.com'` then `New-ComplianceSearchAction -SearchName phish-0412 -Purge -PurgeType SoftDelete` (or Threat Explorer > Take action).",
   "Block the sender/domain and URLs in the Tenant Allow/Block List: `New-TenantAllowBlockListItems -ListType Url -Block -Entries 'micros0ft-support.com'`.",
   "Check who clicked (Defender 'URL clicks' / proxy logs) and follow the credential-compromise runbook for anyone who entered a password.",
   "Reply to the reporter and thank them."],
  "Anyone clicked and entered credentials or opened an attachment, or the email targets executives/finance (possible BEC).",
  "phishing email purge compliance-search defender spf dmarc security",
  ["all-staff", "finance-team", "eng-team"],
  ["got this weird email saying my mailbox is full and I need to log in. is it legit? forwarding it",
   "lots of people in {h} got an email from 'IT Support' with a docusign link. looks fake"],
  "Analyse the reported message headers, links and attachments, then find every recipient and purge it (`New-ComplianceSearch` + `New-ComplianceSearchAction -Purge -PurgeType SoftDelete` or Threat Explorer). Block the sender domain and URLs in the Tenant Allow/Block List and check click logs; anyone who entered credentials goes through the compromise runbook.",
  ("SEV3", "Credential-phishing campaign targeting {h}", "An email impersonating IT support reached 430 mailboxes; 3 users clicked, no credentials entered, purged within 35 minutes."),
  ("got the 'mailbox full' email and I clicked and typed my password before I realised... sorry!! what do I do",
   "The user entered their password on a phishing page, so this is a credential compromise, not just a reported email. Immediately reset the password and revoke sessions, purge the message tenant-wide, and escalate to Security Operations (SOC) to investigate sign-ins and mailbox activity."))

A(S, "Compromised account after phishing: contain and recover",
  ["User entered their password on a fake login page",
   "Entra sign-in logs show a successful sign-in from an unfamiliar ASN/country right after the phishing click",
   "Sent Items contains mails the user did not send; new inbox rules exist"],
  "The attacker captured the password (and possibly the session token via an adversary-in-the-middle proxy, which bypasses MFA) and is using the mailbox for further phishing or BEC.",
  ["Revoke all sessions and refresh tokens: `Revoke-MgUserSignInSession -UserId jdoe@example.com`; reset the password and block sign-in (`Update-MgUser -UserId jdoe@example.com -AccountEnabled:$false`) until cleanup is done.",
   "Remove attacker persistence: `Get-InboxRule -Mailbox jdoe | Format-List Name,Enabled,ForwardTo,RedirectTo,DeleteMessage`, `Remove-InboxRule`, check `Get-Mailbox jdoe | fl ForwardingSmtpAddress,DeliverToMailboxAndForward`, and review registered MFA methods and OAuth app consents.",
   "Review sign-in and audit logs (Unified Audit Log: `Search-UnifiedAuditLog -UserIds jdoe@example.com -StartDate ... -Operations MailItemsAccessed,New-InboxRule,Send`).",
   "Re-enable the account with new MFA registration and inform recipients of any malicious emails sent.",
   "Open a security incident and preserve evidence."],
  "Always escalate to Security Operations once compromise is confirmed; this runbook covers only immediate containment.",
  "account-compromise phishing bec inbox-rule revoke-sessions incident security",
  ["jdoe", "finance-ap-01", "m.rossi"],
  ["I think my account was hacked, people are receiving emails from me that I didn't send",
   "{h} entered password on fake microsoft page 10 min ago"],
  "Contain immediately: revoke all sessions (`Revoke-MgUserSignInSession`), reset the password and block sign-in for {h}, then remove attacker persistence (malicious inbox rules, forwarding, new MFA methods, OAuth consents) and review the Unified Audit Log. Once compromise is confirmed, open a security incident with Security Operations.",
  ("SEV2", "Mailbox compromise of {h} via AiTM phishing", "The attacker sent 600 internal phishing mails from the account over 40 minutes before containment."),
  ("{h} in accounts payable got hacked, and the attacker emailed a supplier asking to change bank details. supplier already sent the payment to the new account",
   "A compromised finance mailbox used for bank-detail fraud with money already moved is a confirmed BEC incident. Contain the account (revoke sessions, reset password, remove rules) and escalate immediately to Security Operations (SOC), who will engage Finance and Legal for payment recall."))

A(S, "Suspicious inbox rule forwarding mail externally",
  ["Inbox rule named '.' or '..' moves messages to RSS Subscriptions / Archive and marks them read",
   "Defender alert: 'Suspicious inbox forwarding' / 'Suspicious email forwarding activity'",
   "Messages to external address via ForwardingSmtpAddress on the mailbox"],
  "An attacker with access to the mailbox created hidden rules or mailbox forwarding to exfiltrate mail and hide replies from the victim.",
  ["List rules including hidden ones: `Get-InboxRule -Mailbox jdoe -IncludeHidden | fl Name,Description,ForwardTo,RedirectTo,MoveToFolder`.",
   "Remove them: `Remove-InboxRule -Mailbox jdoe -Identity '<rule name>'` and clear forwarding: `Set-Mailbox jdoe -ForwardingSmtpAddress $null -DeliverToMailboxAndForward $false`.",
   "Treat the account as compromised: revoke sessions and reset the password.",
   "Ensure outbound automatic forwarding to external domains is disabled by policy (anti-spam outbound policy `AutoForwardingMode Off`).",
   "Identify what was forwarded using message trace (`Get-MessageTraceV2 -SenderAddress jdoe@example.com -StartDate (Get-Date).AddDays(-10)`)."],
  "Sensitive or regulated data was forwarded externally (possible data breach notification).",
  "inbox-rule forwarding exchange defender account-compromise security",
  ["jdoe", "hr-director", "k.lee"],
  ["Defender alert 'Suspicious inbox forwarding' for {h}",
   "I noticed a rule in my outlook called '..' that I never made, my emails disappear"],
  "Hidden rules or mailbox forwarding on {h} indicate an attacker; list them with `Get-InboxRule -IncludeHidden`, remove them and clear `ForwardingSmtpAddress`, then revoke sessions and reset the password. Use message trace to see what was forwarded and make sure external auto-forwarding is disabled by policy.",
  ("SEV2", "Malicious forwarding rule on {h}", "Mail was forwarded to an external Gmail address for 9 days before detection."),
  ("found a rule in the HR director's mailbox forwarding everything to a gmail address since 2 weeks. it included salary files",
   "Regulated HR data (salaries) forwarded externally for two weeks is a potential personal-data breach with notification duties. Remove the rule and contain the account, then escalate to Security Operations and the Privacy/DPO team for breach assessment."))

A(S, "AWS access key leaked publicly (e.g. pushed to GitHub)",
  ["AWS Health / email: 'Your AWS Access Key is exposed' (AWS_RISK_CREDENTIALS_EXPOSED) and AWSCompromisedKeyQuarantineV2 policy attached to the user",
   "GitHub secret scanning alert: 'Amazon AWS Access Key ID' detected in commit",
   "Unexpected EC2 instances (often GPU types) launched in unused regions"],
  "A long-lived IAM user access key was committed to a public repository or pasted somewhere public; automated scanners find such keys within minutes.",
  ["Deactivate immediately: `aws iam update-access-key --user-name ci-deploy --access-key-id AKIA... --status Inactive` (do not wait for the repo cleanup).",
   "Find what the key did: CloudTrail `aws cloudtrail lookup-events --lookup-attributes AttributeKey=AccessKeyId,AttributeValue=AKIA... --max-results 50` in every region; look for RunInstances, CreateUser, CreateAccessKey, PutBucketPolicy.",
   "Remove anything the attacker created (instances in all regions, new IAM users/keys/roles) and check billing.",
   "Create a replacement credential (prefer roles/OIDC instead of a new long-lived key), update consumers, then delete the old key: `aws iam delete-access-key`.",
   "Clean the repository history (`git filter-repo`) after rotation; the key is already compromised regardless."],
  "CloudTrail shows any activity by the key not attributable to our own systems.",
  "leaked-key aws iam access-key github cloudtrail secrets security",
  ["ci-deploy", "data-export-bot", "analytics-uploader"],
  ["AWS sent an email that the access key for {h} is exposed and attached some quarantine policy. our deploys are failing now",
   "oops, I pushed a .env with AWS keys to a public github repo 20 min ago. I deleted the commit already"],
  "Deactivate the exposed key for {h} immediately (`aws iam update-access-key --status Inactive`) — deleting the commit does not help — and review CloudTrail for everything the key did across all regions. Remove anything unauthorised, issue a replacement (preferably a role/OIDC instead of a long-lived key), update consumers, delete the old key and then purge the repository history.",
  ("SEV2", "Exposed AWS access key for {h}", "The key was public for 11 minutes; the quarantine policy blocked abuse but deploys were down for 1 hour during rotation."),
  ("leaked key for {h} - CloudTrail shows RunInstances of p4d.24xlarge in 6 regions and a new IAM user 'support-admin' that we didn't create",
   "Unknown instances and a new IAM user prove the attacker used the key, which goes beyond rotation. Deactivate the key and escalate immediately to Security Operations (SOC) and the Cloud Platform team as a confirmed AWS account compromise."))

A(S, "Secret committed to a git repository",
  ["GitHub secret scanning / GitGuardian alert: 'Generic high entropy secret' or 'Slack Webhook URL' in a commit",
   "`gitleaks detect` in CI fails the build with 'leaks found: 1'",
   "A password appears in a config file in the repo history"],
  "A credential was hard-coded or a local config/.env file was committed; once pushed, it must be assumed copied even if removed in a later commit.",
  ["Rotate/revoke the secret at its source first (database password, API token, webhook) and update the consumers from the secret manager.",
   "Remove it from the code and load it from a secret store (Vault, AWS Secrets Manager, Kubernetes Secret via External Secrets).",
   "Rewrite history if required by policy: `git filter-repo --replace-text replacements.txt` (or BFG), force-push, and ask GitHub Support to purge cached views for public repos.",
   "Add prevention: `.gitignore` for .env files, pre-commit `gitleaks protect --staged`, and GitHub push protection.",
   "Close the alert documenting the rotation."],
  "The secret grants production data access and logs show use from unknown sources, or the repository was public.",
  "secrets git gitleaks rotation secret-scanning security",
  ["billing-service", "data-pipelines", "mobile-backend"],
  ["secret scanning flagged a postgres password in {h} repo, it's an old commit from last year, can we just dismiss it?",
   "gitleaks blocks my PR in {h} because of a test key. how do I get past it"],
  "Treat the secret in {h} as compromised: rotate or revoke it at the source first, move it into the secret manager, and only then rewrite history with `git filter-repo` if policy requires. Add `gitleaks protect --staged`/push protection and close the alert documenting the rotation; genuine test fixtures can be allowlisted in .gitleaks.toml.",
  ("SEV3", "Database credential committed in {h}", "A production read-only DB password sat in repository history for 5 months; rotated with no evidence of misuse."),
  ("{h} repo was public by mistake for 3 days and it has the production stripe secret key in config.py",
   "A production payment API key in a repository that was public must be treated as compromised and may involve fraud exposure. Rotate the Stripe key immediately and escalate to Security Operations (SOC) to investigate usage and coordinate with the payment provider."))

A(S, "GitHub personal access token exposed or misused",
  ["GitHub email: 'We noticed a GitHub personal access token ... was exposed publicly and has been revoked'",
   "Organisation audit log shows `git.clone` / `repo.download_zip` of many private repos from an unknown IP",
   "CI jobs fail with 'remote: Invalid username or token. Password authentication is not supported for Git operations.'"],
  "A classic PAT with broad scopes (repo, admin:org) was pasted in a public place, a log, or stolen from a developer machine; GitHub auto-revokes publicly exposed tokens, which also breaks any automation using it.",
  ["Confirm the token is revoked (Settings > Developer settings > Personal access tokens) and revoke any other tokens of the user if theft is suspected.",
   "Review the org audit log: `gh api /orgs/ACME/audit-log?phrase=actor:jdoe --paginate` (Enterprise) for clones/downloads and setting changes.",
   "Replace automation tokens with a GitHub App installation token or a fine-grained PAT with minimal repository access and an expiry.",
   "Update the secret in CI (`gh secret set GH_TOKEN --repo acme/deploy-tools`) and re-run the pipeline."],
  "The audit log shows clones or changes from unknown IPs.",
  "github pat token leaked-key audit-log secrets security",
  ["acme/deploy-tools", "acme/infra-live", "acme/mobile-app"],
  ["pipelines in {h} fail since this morning with 'Invalid username or token'. github down?",
   "github mailed me that my token was exposed and revoked. I had pasted it in a gist"],
  "GitHub has revoked the exposed personal access token, which is why automation in {h} now fails; check the org audit log for any use of it from unknown IPs. Replace it with a GitHub App or a fine-grained, expiring PAT with minimal scope, update the CI secret (`gh secret set`) and re-run.",
  ("SEV3", "Exposed PAT broke automation in {h}", "Deploys were blocked for 3 hours after GitHub auto-revoked a token pasted in a public gist."),
  ("audit log shows my revoked token was used from an IP in a datacenter abroad to clone 40 private repos before GitHub revoked it",
   "Mass cloning of private repositories by an unknown IP is a confirmed source-code exfiltration. Escalate to Security Operations (SOC) immediately; they will assess secrets contained in those repositories and coordinate rotation."))

A(S, "EDR alert: suspicious encoded PowerShell execution",
  ["CrowdStrike/Defender alert: 'Suspicious PowerShell command line' with `powershell.exe -nop -w hidden -enc JABzAD0A...`",
   "Parent process is WINWORD.EXE or EXCEL.EXE (macro) or mshta.exe",
   "Outbound connection from powershell.exe to an unknown IP shortly after"],
  "A macro-enabled document, malicious shortcut (LNK) or script executed an obfuscated PowerShell stager, typical of commodity malware loaders.",
  ["Network-contain the host from the EDR console (CrowdStrike 'Network contain' / Defender 'Isolate device') — do not wipe yet.",
   "Decode the command for context: `[Text.Encoding]::Unicode.GetString([Convert]::FromBase64String('<blob>'))` in an isolated analysis VM.",
   "Collect the process tree, file hashes and network IOCs from the alert; search for the same IOCs fleet-wide (Defender Advanced Hunting `DeviceProcessEvents | where ProcessCommandLine has '-enc'`).",
   "Reset the user's credentials and revoke sessions if the payload ran.",
   "Hand over to Security Operations with the evidence collected."],
  "Always — malware execution on an endpoint is handled by Security Operations; the helpdesk only isolates and collects.",
  "edr powershell malware crowdstrike defender isolation security",
  ["LT-FIN-0231", "WS-HR-0044", "LT-SALES-0187"],
  ["my antivirus popped up something about powershell after I opened an invoice attachment. laptop {h}",
   "EDR high severity on {h}: encoded powershell spawned by excel"],
  "Network-contain {h} from the EDR console, collect the process tree, decoded command line, hashes and network IOCs, and hunt for the IOCs across the fleet. Reset the user's credentials if the payload ran and hand the case to Security Operations.",
  ("SEV2", "Malicious macro executed on {h}", "A loader ran on one finance laptop; the host was isolated within 6 minutes and no lateral movement was found."),
  ("{h} and 5 other PCs in finance all show the same encoded powershell alert in the last hour, one of them is the domain admin's workstation",
   "The same stager on six hosts including an admin workstation indicates an active spreading intrusion. Isolate the hosts and escalate immediately to Security Operations (SOC) for incident response; do not reimage anything before evidence is collected."))

A(S, "EDR quarantined a legitimate tool (false positive)",
  ["Defender: 'Threat quarantined: Trojan:Win32/Wacatac.B!ml' on an internally built tool",
   "CrowdStrike 'Machine learning detection' blocked an engineering binary (e.g. a Go CLI) from executing",
   "Build agents fail because the EDR deletes freshly compiled executables"],
  "Machine-learning/heuristic detections flag unsigned, packed or newly compiled binaries that have no reputation, especially tools that use network scanning or credential APIs.",
  ["Verify it is really benign: get the SHA256 (`Get-FileHash .\\tool.exe`), confirm it matches the build artifact, and check VirusTotal for the hash (do not upload internal binaries).",
   "Submit the file to the vendor as a false positive (Microsoft Security Intelligence submission portal / CrowdStrike support).",
   "Request a scoped exclusion through Security: an indicator 'Allow' by hash or certificate (Defender: Settings > Endpoints > Indicators > File hashes), never a broad folder or process exclusion.",
   "Restore the file from quarantine after the allow indicator is in place (`MpCmdRun.exe -Restore -Name \"Trojan:Win32/Wacatac.B!ml\"`).",
   "Long term, sign internal binaries with the code-signing certificate."],
  "The hash does not match a known build artifact or the tool performs credential access (e.g. Mimikatz-like functionality) — do not allowlist.",
  "edr false-positive defender crowdstrike allowlist quarantine security",
  ["build-agent-win-02", "LT-ENG-0412", "WS-QA-0009"],
  ["defender keeps deleting our own deploy tool, says Wacatac. can you turn off the antivirus on {h}?",
   "crowdstrike blocks our new go binary on build agents, ML detection. need it whitelisted"],
  "Confirm the binary on {h} is the genuine build artifact by hash, submit it to the vendor as a false positive, and have Security add a scoped allow indicator by hash or signing certificate — never disable the EDR or add folder exclusions. Restore from quarantine afterwards and sign internal binaries going forward.",
  ("SEV4", "EDR false positive blocked builds on {h}", "Windows release builds were blocked for a day until a hash indicator was approved."))

A(S, "Scanner flags weak TLS protocols/ciphers (TLS 1.0/1.1, CBC, RC4)",
  ["Vulnerability scan: 'TLS Version 1.0 Protocol Detection' / 'SSL Medium Strength Cipher Suites Supported (SWEET32)'",
   "`nmap --script ssl-enum-ciphers -p 443 host` shows TLSv1.0/TLSv1.1 and ciphers graded C or lower",
   "SSL Labs grade capped at B"],
  "The web server or load balancer still enables legacy protocols and cipher suites (3DES, RC4, CBC-SHA) for compatibility defaults.",
  ["Enumerate: `nmap --script ssl-enum-ciphers -p 443 web.example.com` or `testssl.sh web.example.com`.",
   "NGINX: `ssl_protocols TLSv1.2 TLSv1.3;` and a modern cipher list for TLS 1.2 (ECDHE+AESGCM/CHACHA20), e.g. from the Mozilla 'intermediate' profile; `ssl_prefer_server_ciphers off;`.",
   "AWS ALB: set the listener policy `aws elbv2 modify-listener --listener-arn <arn> --ssl-policy ELBSecurityPolicy-TLS13-1-2-2021-06`.",
   "Reload and re-scan; check access logs (`$ssl_protocol` in NGINX log format) beforehand to see whether any clients still use TLS 1.0/1.1."],
  "Logs show business-critical clients still negotiating TLS 1.0/1.1 that cannot be upgraded before the remediation deadline.",
  "tls ciphers hardening vulnerability-scan nginx alb security",
  ["web.example.com", "alb-partner-gw", "mail.example.com"],
  ["the pentest report says {h} supports TLS 1.0 and weak ciphers (SWEET32). need it fixed before audit",
   "qualys finding on {h}: SSL Medium Strength Cipher Suites. how do we fix"],
  "Enumerate protocols/ciphers on {h} with `nmap --script ssl-enum-ciphers -p 443` or testssl.sh, then restrict to TLS 1.2/1.3 with modern ECDHE-AESGCM/CHACHA20 suites (NGINX `ssl_protocols TLSv1.2 TLSv1.3;` or an ALB policy such as ELBSecurityPolicy-TLS13-1-2-2021-06). Check logs for remaining legacy clients first, reload and re-scan.",
  ("SEV4", "Legacy TLS enabled on {h}", "An external audit finding required remediation within 30 days; no outage."),
  ("we need to disable TLS 1.0 on {h} but logs show the warehouse handheld scanners (Windows CE) still use TLS 1.0 and there is no upgrade for them",
   "Disabling TLS 1.0 would break business-critical handheld scanners that cannot be upgraded, so this needs a risk decision. Escalate to Security Operations (risk/exception process) to approve a time-limited exception or a segregated legacy endpoint."))

A(S, "Client fails after TLS hardening ('unsupported protocol' / handshake failure)",
  ["curl: (35) error:0A000102:SSL routines::unsupported protocol",
   "Java 8 client: javax.net.ssl.SSLHandshakeException: Received fatal alert: handshake_failure",
   "Python: ssl.SSLError: [SSL: SSLV3_ALERT_HANDSHAKE_FAILURE] sslv3 alert handshake failure"],
  "The client and server share no protocol version or cipher suite — typically an old client (Java 7/8 before update 261 without TLS 1.3, OpenSSL 1.0.x, Windows Server 2008 R2 without TLS 1.2 enabled) calling a server that now only allows TLS 1.2+/modern ciphers, or OpenSSL 3 clients refusing legacy servers.",
  ["Find the mismatch: `openssl s_client -connect host:443 -tls1_2` and `-tls1_3`; on the client check its max protocol (`java -version`, `openssl version`).",
   "Upgrade the client runtime or enable TLS 1.2 (Java: `-Dhttps.protocols=TLSv1.2`; .NET Framework: `SchUseStrongCrypto=1` registry keys; Windows 2008 R2: enable TLS 1.2 in SCHANNEL registry).",
   "If an OpenSSL 3 client must talk to a legacy server, fix the server; use `@SECLEVEL=1` only as a documented temporary measure.",
   "Do not re-enable TLS 1.0/1.1 on the server to accommodate one client without a security exception."],
  "The client cannot be upgraded and a security exception is required.",
  "tls handshake protocol java openssl client security",
  ["legacy-erp-01", "ftp-bridge", "old-reporting-vm"],
  ["since the weekend {h} can't call the API anymore: SSLHandshakeException handshake_failure. did you change something??",
   "curl on the centos box says unsupported protocol talking to our intranet"],
  "The client on {h} and the hardened server share no protocol/cipher; compare with `openssl s_client -tls1_2/-tls1_3` and check the client runtime version. Upgrade the client or enable TLS 1.2 on it (Java `-Dhttps.protocols=TLSv1.2`, .NET `SchUseStrongCrypto`, SCHANNEL registry on old Windows) instead of re-enabling TLS 1.0/1.1 on the server.",
  ("SEV3", "Legacy client {h} broken by TLS hardening", "A nightly ERP export failed for 2 nights after TLS 1.0 was disabled."))

A(S, "Application fails after automatic secret rotation (AWS Secrets Manager)",
  ["App log: FATAL: password authentication failed for user \"app_rw\" shortly after a rotation event",
   "`aws secretsmanager describe-secret --secret-id prod/orders/db` shows LastRotatedDate minutes before the errors",
   "Rotation Lambda log: 'setSecret: Unable to log into database with previous, current, or pending secret'"],
  "The application caches the database password at startup and keeps using it after rotation (single-user rotation invalidates the old password), or the rotation Lambda failed half-way leaving AWSPENDING and the database out of sync.",
  ["Check versions: `aws secretsmanager list-secret-version-ids --secret-id prod/orders/db` and compare AWSCURRENT/AWSPENDING/AWSPREVIOUS.",
   "Test the current value against the DB: `psql \"host=... user=app_rw password=$(aws secretsmanager get-secret-value --secret-id prod/orders/db --query SecretString --output text | jq -r .password)\"`.",
   "If the Lambda failed, read its CloudWatch logs (createSecret/setSecret/testSecret/finishSecret steps), fix networking/permissions, and re-run `aws secretsmanager rotate-secret --secret-id prod/orders/db`.",
   "Restart/reload the application to pick up AWSCURRENT; long-term use the alternating-users rotation strategy and a caching client that refreshes on auth failure."],
  "AWSCURRENT does not work against the database and the previous version does not either (credential lost) on a production database.",
  "secrets-rotation secrets-manager aws database password security",
  ["orders-api", "billing-worker", "inventory-sync"],
  ["{h} started failing with password authentication failed for user app_rw at 03:00. nobody changed the password!",
   "db auth errors on {h} every month on the 1st. weird"],
  "The failures coincide with Secrets Manager rotation: {h} caches the old password, or the rotation Lambda failed mid-way. Check version stages with `aws secretsmanager list-secret-version-ids`, test AWSCURRENT against the DB, fix and re-run the rotation if the Lambda failed, restart the app, and move to alternating-user rotation with a refreshing client.",
  ("SEV2", "{h} database authentication failures after rotation", "Orders could not be written for 22 minutes after the monthly rotation until pods were restarted."),
  ("after the rotation neither AWSCURRENT nor AWSPREVIOUS password works for the prod orders DB, {h} is completely down",
   "No stored version of the credential works against the production database, so only a DBA can reset the user's password. Escalate to the DBA on-call (with Security informed) to reset app_rw and re-sync the secret."))

A(S, "HashiCorp Vault sealed after restart",
  ["`vault status` shows 'Sealed true' and 'Unseal Progress 0/3'",
   "Clients: 'Error making API request ... Code: 503. Errors: * Vault is sealed'",
   "Applications fail to fetch secrets after a node reboot or Vault upgrade"],
  "Vault starts sealed after every process restart unless auto-unseal (cloud KMS/HSM) is configured; with Shamir keys, a quorum of key holders must unseal each node.",
  ["Check status on every node: `VAULT_ADDR=https://vault-01:8200 vault status`.",
   "If auto-unseal is configured, check its KMS access in the logs (`journalctl -u vault | grep -i seal`), e.g. the instance role lost kms:Decrypt.",
   "With Shamir keys, page the key holders to each run `vault operator unseal` until the threshold (e.g. 3 of 5) is met on each node.",
   "Verify HA state: `vault operator raft list-peers` and that one node is active.",
   "Never store unseal keys in tickets or chat."],
  "Unseal key holders cannot be reached or the auto-unseal KMS key is unavailable/deleted.",
  "vault sealed unseal secrets kms security",
  ["vault-01", "vault-02", "vault-03"],
  ["apps can't get secrets: 'Vault is sealed' since the patching of {h}",
   "vault returns 503 sealed. can I just restart it again?"],
  "{h} restarted and came back sealed; `vault status` confirms it. If auto-unseal is used, fix its KMS access (e.g. the role lost kms:Decrypt); with Shamir keys have the key holders run `vault operator unseal` up to the threshold on each node, then verify `vault operator raft list-peers` shows an active node.",
  ("SEV1", "Vault cluster sealed after patching ({h})", "All services depending on dynamic secrets failed to start new pods for 50 minutes."),
  ("vault nodes sealed after the AWS account migration. logs say the auto-unseal KMS key doesn't exist in the new account",
   "Without the auto-unseal KMS key Vault cannot be unsealed at all, which threatens every secret it holds. Escalate immediately to Security Operations and the Cloud Platform team to restore access to the original KMS key (or recovery keys) — do not reinitialise Vault."))

A(S, "SSH warning: 'REMOTE HOST IDENTIFICATION HAS CHANGED!'",
  ["@@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@@",
   "'Host key for 10.20.1.15 has changed and you have requested strict checking. Host key verification failed.'",
   "Appears after a server rebuild, IP reuse or a load balancer in front of several SSH hosts"],
  "The server's host key differs from the one in known_hosts — expected after a rebuild or IP reuse, but it can also indicate a man-in-the-middle.",
  ["Do not just delete the entry: verify the new fingerprint out of band, e.g. from the console/cloud serial output (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on the server) or the CMDB/rebuild ticket.",
   "If it matches an expected rebuild, remove the old key: `ssh-keygen -R 10.20.1.15` (and the hostname) and reconnect, checking the fingerprint.",
   "For fleets, use SSH certificates or publish host keys (`@cert-authority` in known_hosts) to avoid the warning on rebuilds.",
   "If no rebuild happened, stop and report it."],
  "No rebuild or IP change explains the new key (possible MITM).",
  "ssh host-key known_hosts mitm security",
  ["bastion-01", "10.20.1.15", "db-admin-02"],
  ["ssh to {h} gives a huge warning REMOTE HOST IDENTIFICATION HAS CHANGED. can I just delete known_hosts?",
   "host key verification failed for {h} after the weekend"],
  "Verify {h}'s new host key fingerprint out of band (console `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`, CMDB or the rebuild ticket) before trusting it. If it matches an expected rebuild remove the old entry with `ssh-keygen -R {h}` and reconnect; if nothing explains the change, stop and report it as a possible MITM.",
  ("SEV4", "Host key changes after rebuild of {h}", "Engineers were blocked from a rebuilt host for an hour; fleet moved to SSH host certificates afterwards."),
  ("ssh to {h} says host key changed. nobody rebuilt it according to the CMDB and the change calendar, and the fingerprint doesn't match the console",
   "A host key that does not match the console and has no rebuild explanation is a possible man-in-the-middle. Do not connect or remove the known_hosts entry; escalate to Security Operations (SOC) to investigate."))

A(S, "SSH 'Permission denied (publickey)'",
  ["jdoe@bastion-01: Permission denied (publickey).",
   "`ssh -vvv` shows 'Offering public key: /home/jdoe/.ssh/id_ed25519' followed by 'Authentications that can continue: publickey'",
   "Server /var/log/auth.log: 'Authentication refused: bad ownership or modes for directory /home/jdoe/.ssh'"],
  "The server does not accept the offered key: the public key is missing from authorized_keys, file permissions on ~/.ssh are too open, the wrong user or key is used, or the key type is disabled (ssh-rsa SHA-1 signatures are off by default since OpenSSH 8.8).",
  ["Client side: `ssh -vvv jdoe@bastion-01` to see which keys are offered and which auth methods remain.",
   "Server side: `journalctl -u ssh -n 50` or /var/log/auth.log / /var/log/secure for the refusal reason.",
   "Fix permissions: `chmod 700 ~/.ssh && chmod 600 ~/.ssh/authorized_keys && chown -R jdoe: ~/.ssh`; SELinux: `restorecon -Rv ~/.ssh`.",
   "Add the key through the access-management process (or `ssh-copy-id`) — do not share keys between users.",
   "For old RSA keys rejected by new OpenSSH, generate an ed25519 key: `ssh-keygen -t ed25519`."],
  "The user needs access to a host they were not previously granted (access approval required).",
  "ssh publickey authorized_keys permissions linux security",
  ["bastion-01", "build-01", "db-admin-02"],
  ["can't ssh into {h}: Permission denied (publickey). it worked yesterday",
   "new laptop, copied my key over but ssh says permission denied publickey"],
  "Run `ssh -vvv` to see which key is offered and read the refusal reason in /var/log/auth.log (or `journalctl -u ssh`) on {h}. Fix ~/.ssh permissions (700/600, correct owner, `restorecon` on SELinux), make sure the right public key is in authorized_keys via the access process, and replace old ssh-rsa keys with ed25519.",
  ("SEV4", "SSH access failures on {h}", "A permissions change by a config-management run locked 20 engineers out of a bastion for an hour."),
  ("please add my key to {h}, I'm from the marketing analytics team and need to look at the prod database logs",
   "This is not a broken key but a request for new access to a production host, which requires approval. Route it to Identity & Access Management / the host owner for an access request rather than adding the key."))

A(S, "'user is not in the sudoers file' / sudo access request",
  ["jdoe is not in the sudoers file.  This incident will be reported.",
   "'Sorry, user jdoe is not allowed to execute '/bin/systemctl restart nginx' as root on web-07.'",
   "/var/log/auth.log: 'sudo: jdoe : user NOT in sudoers ; TTY=pts/0 ; PWD=/home/jdoe ; USER=root ; COMMAND=/bin/bash'"],
  "The user is not in a group or rule that grants sudo on this host (groups come from LDAP/SSSD or config management), or the sudo rule only allows specific commands.",
  ["Check the user's rights: `sudo -l -U jdoe` (as an admin) and group membership `id jdoe`.",
   "If group-based via SSSD, confirm the group is visible: `getent group ops-sudo` and clear cache `sss_cache -E` after group changes.",
   "Grant access only via the approved process: add to the appropriate group in the directory or a command-scoped rule in config management (e.g. `/etc/sudoers.d/web-ops` with `%web-ops ALL=(root) /bin/systemctl restart nginx`), validated with `visudo -cf`.",
   "Never edit /etc/sudoers by hand on managed hosts; changes are overwritten by Ansible/Puppet."],
  "The request is for full root on production hosts or the user is outside the owning team.",
  "sudo sudoers privilege access linux security",
  ["web-07", "etl-worker-02", "jenkins-agent-03"],
  ["I need sudo on {h} to restart nginx, it says I'm not in the sudoers file and this incident will be reported?? am I in trouble",
   "lost sudo on {h} after I was moved to the new team group"],
  "Check `sudo -l -U <user>` and `id <user>` on {h}; sudo comes from directory groups via SSSD or from config-managed /etc/sudoers.d rules. After approval, add the user to the right group (then `sss_cache -E`) or a command-scoped rule in config management validated with `visudo -cf` — never hand-edit sudoers on managed hosts.",
  ("SEV4", "Sudo rights lost on {h} after group migration", "An on-call engineer could not restart a failing service for 25 minutes because the new group was not in sudoers."),
  ("need full root (ALL=(ALL) ALL) on all prod payment servers for my contractor account, deadline tomorrow",
   "Full root on production payment servers for a contractor is a privileged-access request that requires security approval, not a helpdesk fix. Escalate to Identity & Access Management / Security for approval via the privileged-access process."))

A(S, "fail2ban banned a legitimate IP",
  ["SSH to the server: 'Connection refused' or times out from one office IP only",
   "`fail2ban-client status sshd` lists the office NAT IP under 'Banned IP list'",
   "/var/log/fail2ban.log: 'NOTICE [sshd] Ban 203.0.113.50'"],
  "Several users behind the same NAT (or an automation with a wrong key) produced enough failed logins to trigger the jail's maxretry within findtime.",
  ["Confirm: `fail2ban-client status sshd` and `grep 203.0.113.50 /var/log/fail2ban.log`.",
   "Unban: `fail2ban-client set sshd unbanip 203.0.113.50`.",
   "Find and fix the source of failures (automation with wrong key, users with wrong username) via /var/log/auth.log.",
   "Add trusted office/VPN ranges to `ignoreip = 127.0.0.1/8 10.0.0.0/8 203.0.113.50/32` in /etc/fail2ban/jail.local and `fail2ban-client reload`."],
  "The banned IP is not a known corporate address (real attack) and someone still wants it unbanned.",
  "fail2ban ssh ban brute-force linux security",
  ["bastion-01", "sftp-ext-01", "git-01"],
  ["nobody in the Leeds office can ssh to {h} since 10am, from home it works",
   "our deploy runner gets connection refused to {h}, fail2ban?"],
  "fail2ban on {h} has banned the office/runner IP after repeated failed logins; confirm with `fail2ban-client status sshd` and unban with `fail2ban-client set sshd unbanip <ip>`. Fix the source of the failed logins in auth.log and add trusted corporate ranges to `ignoreip` in jail.local.",
  ("SEV4", "Office NAT IP banned by fail2ban on {h}", "An office of 40 engineers lost SSH access to a bastion for 90 minutes."))

A(S, "Possible ransomware: files renamed/encrypted on a share",
  ["Files on a share suddenly have extensions like .lockbit or .encrypted and will not open",
   "A ransom note (README.txt / HOW_TO_RESTORE.html) appears in many folders",
   "File server shows a spike of rename/write operations from one user session"],
  "Ransomware running on an endpoint (or with the user's credentials) is encrypting every file it can reach, including mapped network shares.",
  ["Isolate the suspected endpoint immediately (EDR network containment or pull the network cable) — do not power it off.",
   "Identify the writing session on the file server: `Get-SmbOpenFile | Group ClientUserName | Sort Count -Desc` / `Get-SmbSession`, disable that user (`Disable-ADAccount`) and close its sessions (`Close-SmbSession`).",
   "Stop the spread: make affected shares read-only or temporarily stop the share if encryption continues.",
   "Do not delete encrypted files or ransom notes; preserve evidence and check snapshot/backup availability (VSS `vssadmin list shadows`, storage snapshots).",
   "Declare a security incident."],
  "Always — suspected ransomware is a SEV1 security incident to be handled by Security Operations immediately.",
  "ransomware malware file-share incident isolation security",
  ["fs-01", "fs-eu-02", "nas-finance"],
  ["all my excel files on the S: drive are called .lockbit now and there's a README file in every folder??",
   "{h} shares are full of HOW_TO_RESTORE.html files"],
  "Isolate the suspected endpoint immediately (EDR containment, do not power off), find and disable the user session writing to {h} (`Get-SmbOpenFile`, `Disable-ADAccount`, `Close-SmbSession`) and make the shares read-only to stop the spread. Preserve evidence, check snapshot/backup availability, and declare a security incident with Security Operations.",
  ("SEV1", "Ransomware encryption on {h}", "About 180,000 files on a departmental share were encrypted in 25 minutes; restored from snapshots after 10 hours."),
  ("the S: drive on {h} is being encrypted right now, new .lockbit files appearing every second",
   "Active encryption on a file server is a SEV1 ransomware incident. Disable the writing user's sessions and isolate the source endpoint if identifiable, and escalate immediately to Security Operations (SOC) to run the ransomware response; preserve evidence and do not attempt recovery on your own."))

A(S, "Legitimate mail rejected or in spam: SPF PermError (too many DNS lookups)",
  ["Recipient bounce: '550 5.7.23 The message was rejected because of Sender Policy Framework violation'",
   "Authentication-Results: spf=permerror (too many DNS lookups) smtp.mailfrom=example.com; dmarc=fail",
   "Mail from a newly added SaaS sender (e.g. marketing platform) goes to spam"],
  "SPF allows at most 10 DNS-querying mechanisms (include, a, mx, ptr, exists, redirect); adding another `include:` for a new sender pushed the record over the limit, so SPF returns permerror and DMARC fails unless DKIM aligns.",
  ["Check the record: `dig +short TXT example.com | grep spf` and count lookups with an SPF checker (`npx spf-check example.com` or dmarcian/MXToolbox).",
   "Remove unused includes and replace `a`/`mx`/`ptr` with explicit ip4: ranges; move bulk senders to a subdomain (e.g. `news.example.com`) with its own SPF.",
   "Enable DKIM signing for every third-party sender with the organisational domain so DMARC passes on DKIM alignment.",
   "Publish the corrected TXT record and verify with a test mail to a mailbox showing Authentication-Results.",
   "Monitor DMARC aggregate reports (rua) for remaining failures."],
  "DNS for example.com is managed by an external agency or the DMARC policy must be changed.",
  "email spf dmarc dkim dns deliverability security",
  ["example.com", "billing.example.com", "news.example.com"],
  ["customers say our invoices land in spam since we started using the new newsletter tool",
   "bounce: 550 5.7.23 SPF violation when sending from {h} to a customer"],
  "The SPF record for {h} exceeds 10 DNS lookups (spf=permerror), most likely after adding another include for a new sender. Flatten/remove includes (explicit ip4 ranges, move bulk senders to a subdomain), enable DKIM for third-party senders so DMARC aligns, publish the fixed record and verify Authentication-Results on a test mail.",
  ("SEV3", "Outbound mail failing SPF for {h}", "Invoice emails to 3 large customers bounced for a day after a new sender include was added."))

# ---------------------------------------------------------------------------
# CLOUD
# ---------------------------------------------------------------------------

A(C, "AWS AccessDenied: no identity-based policy allows the action",
  ["An error occurred (AccessDenied) when calling the GetObject operation: User: arn:aws:sts::123456789012:assumed-role/etl-runner/i-0abc is not authorized to perform: s3:GetObject on resource: \"arn:aws:s3:::acme-raw-data/2025/01/x.parquet\" because no identity-based policy allows the s3:GetObject action",
   "Terraform: Error: creating EC2 Instance: UnauthorizedOperation: You are not authorized to perform this operation. Encoded authorization failure message: ...",
   "Works for one engineer's role but not for the CI role"],
  "The calling principal's attached policies do not grant the action on that resource ARN (wrong resource ARN such as a bucket ARN instead of bucket/*, missing action, or policy attached to a different role).",
  ["Identify the principal: `aws sts get-caller-identity`.",
   "Decode EC2-style messages: `aws sts decode-authorization-message --encoded-message <msg> --query DecodedMessage --output text | jq .`.",
   "Simulate: `aws iam simulate-principal-policy --policy-source-arn arn:aws:iam::123456789012:role/etl-runner --action-names s3:GetObject --resource-arns arn:aws:s3:::acme-raw-data/2025/01/x.parquet`.",
   "Add a least-privilege statement via IaC (object actions need `arn:aws:s3:::bucket/*`, ListBucket needs `arn:aws:s3:::bucket`), apply, and re-run the simulation.",
   "Allow a few seconds for IAM eventual consistency before retesting."],
  "The simulation shows an explicit deny from an SCP or permissions boundary, or the grant needs cross-account or admin-level permissions.",
  "aws iam accessdenied policy simulate-principal-policy permissions cloud",
  ["etl-runner", "ci-deploy-role", "reporting-lambda-role"],
  ["my job running as {h} gets AccessDenied reading from acme-raw-data. it worked last week I swear. s3 broken?",
   "terraform apply fails with UnauthorizedOperation + a giant encoded message. what do I do",
   "{h} not authorized to perform s3:GetObject ... because no identity-based policy allows"],
  "Confirm the principal with `aws sts get-caller-identity` and run `aws iam simulate-principal-policy --policy-source-arn <{h} ARN> --action-names <action> --resource-arns <arn>` (decode encoded EC2 messages with `aws sts decode-authorization-message`). Add a least-privilege statement via IaC with the correct resource ARN (bucket/* for object actions), apply and re-run the simulation.",
  ("SEV3", "Pipeline role {h} lost S3 read access", "Daily ingestion was delayed 5 hours after a policy refactor removed the bucket/* resource."))

A(C, "AWS explicit deny from Service Control Policy (SCP)",
  ["... is not authorized to perform: ec2:RunInstances on resource: arn:aws:ec2:ap-southeast-2:... with an explicit deny in a service control policy",
   "Admin role in the account still gets AccessDenied for one region or service",
   "`aws iam simulate-principal-policy` says 'allowed' but the real call is denied"],
  "An organization SCP (e.g. region restriction, deny for certain instance types or for disabling CloudTrail) denies the action; SCPs apply to every principal in member accounts including admins, and IAM policy simulation in the account does not evaluate them.",
  ["Read the message: 'explicit deny in a service control policy' identifies the SCP layer.",
   "List SCPs (from the management/delegated admin account): `aws organizations list-policies-for-target --target-id <account-id> --filter SERVICE_CONTROL_POLICY` and check OU-level policies too.",
   "Check the condition keys in the deny statement (e.g. `aws:RequestedRegion` not in [eu-west-1, eu-central-1]).",
   "Use an allowed region/instance type, or request an exception from the cloud governance team; do not try to work around SCPs with other accounts."],
  "An SCP exception is required — only the Cloud Platform governance team can change organisation policies.",
  "aws scp organizations explicit-deny iam region cloud",
  ["sandbox-ml-42", "prod-data-01", "dev-platform-07"],
  ["I'm admin in account {h} but can't launch anything in ap-southeast-2, explicit deny in a service control policy??",
   "cloudtrail stop logging denied even for my admin role, bug in aws?"],
  "'Explicit deny in a service control policy' means an organisation SCP on {h} or its OU blocks the action for every principal, including admins; list them with `aws organizations list-policies-for-target` and read the deny conditions (e.g. aws:RequestedRegion). Use an allowed region/type, otherwise request an exception from Cloud Platform governance.",
  ("SEV4", "SCP region restriction blocked deployment in {h}", "A team's new regional deployment was blocked for 2 days pending a governance exception."),
  ("we NEED to run in ap-southeast-2 for an Australian customer contract starting Monday but the SCP on {h} denies that region",
   "Allowing a new region requires changing an organisation SCP, which only the Cloud Platform governance team can do. Escalate to the Cloud Platform team with the business justification and data-residency requirement for an SCP exception."))

A(C, "AssumeRole fails: trust policy does not allow the caller",
  ["An error occurred (AccessDenied) when calling the AssumeRole operation: User: arn:aws:iam::111111111111:user/jdoe is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::222222222222:role/deploy",
   "GitHub Actions: 'Error: Could not assume role with OIDC: Not authorized to perform sts:AssumeRoleWithWebIdentity'",
   "Cross-account access worked until the role was recreated"],
  "Both sides must allow the call: the role's trust policy must name the caller (account, role, or OIDC provider with matching `sub`/`aud` conditions) and the caller must have sts:AssumeRole permission; recreating a role also breaks trust policies referencing its old unique ID.",
  ["Show the trust policy: `aws iam get-role --role-name deploy --query Role.AssumeRolePolicyDocument`.",
   "For cross-account, the Principal must be the caller's role ARN or account, and the caller needs `sts:AssumeRole` on the target role ARN in its own policy.",
   "For GitHub OIDC, check the condition: `token.actions.githubusercontent.com:sub` must match e.g. `repo:acme/infra-live:ref:refs/heads/main` (or `environment:prod`) and `aud` = `sts.amazonaws.com`.",
   "Update the trust policy: `aws iam update-assume-role-policy --role-name deploy --policy-document file://trust.json` (via IaC) and retest with `aws sts assume-role --role-arn ... --role-session-name test`."],
  "The target role is in an account owned by another team or requires broadening trust beyond a single repo/branch.",
  "aws sts assumerole trust-policy oidc github-actions cross-account cloud",
  ["deploy", "readonly-audit", "gha-terraform"],
  ["our github action can't assume {h} anymore: Not authorized to perform sts:AssumeRoleWithWebIdentity. we only renamed the branch",
   "cross account assume role to {h} AccessDenied, I have admin in my account!"],
  "AssumeRole needs both a trust policy on {h} naming the caller and sts:AssumeRole permission on the caller; inspect the trust with `aws iam get-role --query Role.AssumeRolePolicyDocument`. For GitHub OIDC make the `sub` condition match the repo/branch or environment (renaming a branch breaks it) and `aud` = sts.amazonaws.com, update the trust via IaC and test with `aws sts assume-role`.",
  ("SEV3", "CI unable to assume {h}", "All production deploys were blocked for 3 hours after a branch rename broke the OIDC trust condition."))

A(C, "Expired AWS credentials (ExpiredToken / SSO session expired)",
  ["An error occurred (ExpiredToken) when calling the GetCallerIdentity operation: The security token included in the request is expired",
   "'Error when retrieving token from sso: Token has expired and refresh failed'",
   "Terraform: 'ExpiredToken: The security token included in the request is expired' mid-apply"],
  "Temporary credentials from IAM Identity Center (SSO) or AssumeRole have a fixed lifetime (1-12 h); CLI sessions or exported env vars outlive them.",
  ["Re-authenticate: `aws sso login --profile prod-admin` and test `aws sts get-caller-identity --profile prod-admin`.",
   "Clear stale env vars that override profiles: `unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN`.",
   "For long operations, request a longer role session (`--duration-seconds`, up to the role's MaxSessionDuration) or use a CI role rather than a personal session.",
   "If Terraform was interrupted mid-apply, re-run `terraform plan` and release any stale lock before applying again."],
  "Re-authentication fails at the IdP (account disabled/not assigned to the permission set).",
  "aws sso expiredtoken credentials sts cli cloud",
  ["prod-admin", "dev-readonly", "data-eng"],
  ["aws cli says The security token included in the request is expired. I logged in this morning!",
   "terraform died halfway with ExpiredToken using profile {h}"],
  "The temporary credentials for {h} have expired: run `aws sso login --profile {h}`, unset any exported AWS_* variables that override the profile, and verify with `aws sts get-caller-identity`. For long runs use a longer session duration or a CI role, and re-plan (releasing any stale lock) if Terraform was interrupted.",
  ("SEV4", "Interrupted production apply due to expired session ({h})", "A half-applied change left a service with mixed configuration for 30 minutes."))

A(C, "AccessDenied caused by IAM permissions boundary",
  ["... is not authorized to perform: iam:CreateRole on resource: ... because no permissions boundary allows the iam:CreateRole action",
   "Developer role has AdministratorAccess attached but still gets AccessDenied",
   "Created roles fail with 'because no permissions boundary allows' unless the boundary is set on them"],
  "The principal has a permissions boundary; effective permissions are the intersection of identity policies and the boundary, so actions outside the boundary are denied regardless of attached policies, and delegated-admin setups often require new roles to carry the same boundary.",
  ["Show the boundary: `aws iam get-role --role-name dev-admin --query Role.PermissionsBoundary`.",
   "Read the boundary policy: `aws iam get-policy-version --policy-arn <arn> --version-id $(aws iam get-policy --policy-arn <arn> --query Policy.DefaultVersionId --output text)`.",
   "When creating roles, pass the required boundary: `aws iam create-role ... --permissions-boundary arn:aws:iam::123456789012:policy/dev-boundary`.",
   "If the action is legitimately needed, request a boundary update through the platform team's IaC."],
  "The permissions boundary itself must be changed.",
  "aws iam permissions-boundary accessdenied cloud",
  ["dev-admin", "team-payments-deployer", "sandbox-user"],
  ["I have AdministratorAccess on {h} but iam:CreateRole says no permissions boundary allows it",
   "can't create a role for my lambda, says boundary. what boundary?"],
  "{h} has a permissions boundary, so its effective rights are the intersection of the attached policies and the boundary; read it with `aws iam get-role --query Role.PermissionsBoundary`. Create roles with the required `--permissions-boundary` ARN, and if the action really is needed, request a boundary change through the platform team's IaC.",
  ("SEV4", "Deploy blocked by permissions boundary for {h}", "A team's new Lambda could not be deployed for a day until roles were created with the required boundary."))

A(C, "EKS pod not using its IAM role (IRSA)",
  ["Pod gets AccessDenied as `assumed-role/eks-node-group-role/i-0...` instead of the service's role",
   "SDK error: WebIdentityErr: failed to retrieve credentials caused by: InvalidIdentityToken: No OpenIDConnect provider found in your account for https://oidc.eks.eu-west-1.amazonaws.com/id/ABC123",
   "AWS_ROLE_ARN / AWS_WEB_IDENTITY_TOKEN_FILE env vars missing in the pod"],
  "IRSA requires the cluster's OIDC provider in IAM, the ServiceAccount annotation `eks.amazonaws.com/role-arn`, a trust policy whose `sub` matches `system:serviceaccount:<ns>:<sa>`, and a pod restarted after the annotation was added; if any piece is missing, the SDK falls back to the node role.",
  ["Check the pod: `kubectl exec -n orders deploy/orders-api -- env | grep AWS_` and `kubectl get sa orders-api -n orders -o yaml` for the annotation.",
   "Check the OIDC provider exists: `aws iam list-open-id-connect-providers` vs `aws eks describe-cluster --name prod --query cluster.identity.oidc.issuer`; create with `eksctl utils associate-iam-oidc-provider --cluster prod --approve`.",
   "Verify the role trust policy condition `oidc.eks.<region>.amazonaws.com/id/<ID>:sub` = `system:serviceaccount:orders:orders-api`.",
   "Restart the workload so the webhook injects credentials: `kubectl rollout restart deploy/orders-api -n orders`.",
   "Confirm with `aws sts get-caller-identity` from inside the pod."],
  "The cluster OIDC provider must be created/changed in a shared account managed by the platform team.",
  "aws eks irsa iam serviceaccount oidc kubernetes cloud",
  ["orders-api", "image-resizer", "report-exporter"],
  ["{h} in EKS gets AccessDenied and the error mentions the node group role, not our role??",
   "InvalidIdentityToken: No OpenIDConnect provider found for the new cluster, {h} can't read s3"],
  "{h} is falling back to the node role because an IRSA piece is missing: check the ServiceAccount annotation `eks.amazonaws.com/role-arn`, the AWS_ROLE_ARN env in the pod, the cluster OIDC provider (`eksctl utils associate-iam-oidc-provider`) and the trust policy `sub` = system:serviceaccount:<ns>:<sa>. Then `kubectl rollout restart` the deployment and confirm with `aws sts get-caller-identity` in the pod.",
  ("SEV3", "{h} using node role instead of IRSA", "Image processing failed for 2 hours after migration to a new cluster without the OIDC provider."))

A(C, "GCP permission denied for service account",
  ["google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/storage/v1/b/acme-ml-data/o: etl-sa@acme-prod.iam.gserviceaccount.com does not have storage.objects.list access to the Google Cloud Storage bucket. Permission 'storage.objects.list' denied on resource (or it may not exist).",
   "gcloud: ERROR: (gcloud.compute.instances.create) Could not fetch resource: Required 'compute.instances.create' permission for 'projects/acme-prod/zones/europe-west1-b/instances/worker-3'",
   "BigQuery: Access Denied: Project acme-prod: User does not have bigquery.jobs.create permission in project acme-prod."],
  "The service account lacks a role containing the permission at the right level (project, bucket, dataset); roles granted on another project or on the wrong resource do not apply.",
  ["See current bindings: `gcloud projects get-iam-policy acme-prod --flatten='bindings[].members' --filter='bindings.members:etl-sa@acme-prod.iam.gserviceaccount.com' --format='table(bindings.role)'` and bucket-level `gcloud storage buckets get-iam-policy gs://acme-ml-data`.",
   "Use Policy Troubleshooter: `gcloud policy-intelligence troubleshoot-policy iam //storage.googleapis.com/projects/_/buckets/acme-ml-data --principal-email=etl-sa@acme-prod.iam.gserviceaccount.com --permission=storage.objects.list`.",
   "Grant the narrowest predefined role at the narrowest scope, e.g. `gcloud storage buckets add-iam-policy-binding gs://acme-ml-data --member=serviceAccount:etl-sa@acme-prod.iam.gserviceaccount.com --role=roles/storage.objectViewer` (via Terraform where managed).",
   "Retry after ~60 s for propagation."],
  "A deny policy or organisation policy blocks the access, or the grant is on a project owned by another team.",
  "gcp iam service-account permission-denied gcs bigquery cloud",
  ["etl-sa", "dataflow-runner", "ml-training-sa"],
  ["{h} gets 403 does not have storage.objects.list access on acme-ml-data. bucket deleted?",
   "bigquery says user does not have bigquery.jobs.create permission for my scheduled query running as {h}"],
  "{h} lacks a role containing the permission at the right scope; check bindings with `gcloud projects get-iam-policy --flatten ... --filter` (and bucket-level policy) or run the Policy Troubleshooter. Grant the narrowest predefined role at the narrowest scope (e.g. roles/storage.objectViewer on the bucket) through Terraform and retry after about a minute.",
  ("SEV3", "{h} denied access to data bucket", "ML training jobs failed overnight after a bucket migration dropped the IAM binding."))

A(C, "GCP service account key creation blocked by organisation policy",
  ["ERROR: (gcloud.iam.service-accounts.keys.create) FAILED_PRECONDITION: Key creation is not allowed on this service account.",
   "Console: 'Service account key creation is disabled. An Organization Policy that blocks service account key creation has been enforced'",
   "constraints/iam.disableServiceAccountKeyCreation is enforced on the organisation"],
  "The organisation enforces `iam.disableServiceAccountKeyCreation` because long-lived JSON keys are a top leak risk; workloads are expected to use attached service accounts, Workload Identity or Workload Identity Federation instead.",
  ["Confirm: `gcloud resource-manager org-policies describe iam.disableServiceAccountKeyCreation --project=acme-prod --effective`.",
   "On GCE/GKE/Cloud Run, attach the service account to the workload (GKE: Workload Identity `iam.gke.io/gcp-service-account` annotation plus `roles/iam.workloadIdentityUser`).",
   "For external systems (GitHub Actions, AWS, on-prem) configure Workload Identity Federation: `gcloud iam workload-identity-pools create`, add a provider, and use `google-github-actions/auth` with `workload_identity_provider`.",
   "For local development use `gcloud auth application-default login` or service-account impersonation (`--impersonate-service-account`)."],
  "A vendor integration genuinely requires a JSON key (no federation support) and needs a policy exception.",
  "gcp service-account org-policy workload-identity keys cloud",
  ["ci-deployer", "looker-export", "backup-sa"],
  ["I need a json key for service account {h} for our github actions but gcloud says key creation is not allowed",
   "console says service account key creation is disabled by organization policy. how do I authenticate my script?"],
  "Key creation for {h} is blocked by the organisation policy iam.disableServiceAccountKeyCreation by design. Use Workload Identity Federation for external systems such as GitHub Actions (`google-github-actions/auth` with `workload_identity_provider`), attached service accounts / GKE Workload Identity inside GCP, or impersonation for local development.",
  ("SEV4", "Blocked key creation for {h}", "A migration stalled until the CI pipeline was moved to Workload Identity Federation."),
  ("vendor tool for {h} only supports uploading a service account JSON key, no federation. need an exception to the key policy",
   "An exception to iam.disableServiceAccountKeyCreation is an organisation-policy change with security risk. Escalate to the Cloud Platform team and Security for a scoped, time-limited exception on a dedicated project with key rotation."))

A(C, "Azure AuthorizationFailed (missing RBAC role assignment)",
  ["(AuthorizationFailed) The client 'a1b2c3d4-...' with object id 'a1b2c3d4-...' does not have authorization to perform action 'Microsoft.Compute/virtualMachines/write' over scope '/subscriptions/<sub>/resourceGroups/rg-app-prod/providers/Microsoft.Compute/virtualMachines/vm-app-01' or the scope is invalid.",
   "'If access was recently granted, please refresh your credentials.'",
   "Pipeline service connection fails while the same user works in the portal"],
  "The principal (user, service principal or managed identity) has no role assignment granting the action at that scope or above, or a new assignment has not propagated / the token predates it.",
  ["List assignments: `az role assignment list --assignee <appId-or-objectId> --all -o table`.",
   "Grant the least-privileged role at the smallest scope: `az role assignment create --assignee <appId> --role \"Virtual Machine Contributor\" --scope /subscriptions/<sub>/resourceGroups/rg-app-prod`.",
   "Refresh credentials (`az logout && az login` or restart the pipeline) — assignments can take up to 10 minutes to propagate.",
   "Check for deny assignments and Azure Policy denies (`az deployment group what-if` / activity log) if the role is present."],
  "The scope is a subscription or management group you do not own, or Owner/User Access Administrator is requested.",
  "azure rbac authorizationfailed role-assignment service-principal cloud",
  ["sp-ado-deploy", "mi-func-ingest", "sp-terraform-prod"],
  ["azure devops pipeline with {h} fails AuthorizationFailed on Microsoft.Compute/virtualMachines/write",
   "I was given access yesterday but still get 'does not have authorization to perform action'. portal bug?"],
  "{h} has no role assignment covering the action at that scope (or the token predates it); list assignments with `az role assignment list --assignee <id> --all`. Grant the least-privileged role at the smallest scope with `az role assignment create`, refresh the credentials (propagation can take up to 10 minutes), and check deny assignments/Azure Policy if the role is already present.",
  ("SEV4", "Deploy pipeline {h} missing RBAC", "A release was delayed half a day after a resource group was recreated without its role assignments."),
  ("please give {h} Owner on the whole production subscription, it keeps failing with AuthorizationFailed",
   "Owner on a production subscription is a privileged grant that the helpdesk cannot approve, and least privilege at resource-group scope is usually enough. Escalate to the Cloud Platform team / subscription owner to review and assign the minimal role."))

A(C, "EC2 vCPU limit exceeded (VcpuLimitExceeded)",
  ["An error occurred (VcpuLimitExceeded) when calling the RunInstances operation: You have requested more vCPU capacity than your current vCPU limit of 64 allows for the instance bucket that the specified instance type belongs to.",
   "Auto Scaling activity: 'Launching a new EC2 instance. Status Reason: You have requested more vCPU capacity than your current vCPU limit of 64 allows ... Launching EC2 instance failed.'",
   "Only some instance families fail (e.g. G/P GPU or Spot) while others launch"],
  "On-Demand and Spot instance limits are per-region vCPU quotas per instance family bucket (Standard A/C/D/H/I/M/R/T/Z, G/VT, P, etc.); the requested capacity exceeds the applied quota.",
  ["Check the quota: `aws service-quotas get-service-quota --service-code ec2 --quota-code L-1216C47A` (Running On-Demand Standard instances) and current usage in the Service Quotas console / CloudWatch `AWS/Usage`.",
   "Request an increase: `aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-1216C47A --desired-value 256` and track it with `list-requested-service-quota-change-history`.",
   "Meanwhile clean up idle instances or use another region/instance family with headroom.",
   "Add CloudWatch alarms on the usage metric at 80% of quota."],
  "The increase is large (e.g. GPU P/G families) and AWS support asks for a business case, or it's blocking production scaling right now.",
  "aws quota vcpu ec2 service-quotas limit cloud",
  ["eu-west-1", "us-east-1", "eu-central-1"],
  ["can't start more instances in {h}: VcpuLimitExceeded, limit of 64. need 20 more c6i.4xlarge for the load test",
   "ASG fails to launch, says current vCPU limit of 64 allows. is AWS out of machines?"],
  "This is the per-region vCPU quota for the instance family in {h}, not an AWS capacity problem; check it with `aws service-quotas get-service-quota --service-code ec2 --quota-code L-1216C47A` and request an increase with `request-service-quota-increase`. Meanwhile free idle instances or use another family/region with headroom, and alarm on usage at 80% of quota.",
  ("SEV3", "vCPU quota blocked scaling in {h}", "Batch processing ran at 60% capacity for 6 hours until the quota increase was approved."),
  ("production ASG in {h} can't scale during Black Friday peak, VcpuLimitExceeded, checkout latency already doubled",
   "Production scaling is blocked by the vCPU quota during a peak, so waiting on a normal quota request is not acceptable. File the increase request and escalate to the Cloud Platform team to open a high-severity AWS Support case and shift capacity to other families/regions."))

A(C, "EC2 InsufficientInstanceCapacity",
  ["An error occurred (InsufficientInstanceCapacity) when calling the StartInstances operation (reached max retries: 4): Insufficient capacity.",
   "'We currently do not have sufficient p4d.24xlarge capacity in the Availability Zone you requested (us-east-1a). Our system will be working on provisioning additional capacity.'",
   "Stopped instance cannot be started again after maintenance"],
  "AWS temporarily has no spare capacity of that instance type in that Availability Zone; this is not a quota issue and retries or flexibility are the only remedies.",
  ["Retry after a few minutes; for a stopped instance try again later or change the instance type (`aws ec2 modify-instance-attribute --instance-id i-... --instance-type '{\"Value\": \"m6i.2xlarge\"}'`).",
   "Launch in another AZ (subnet) or use several instance types via an ASG mixed-instances policy / EC2 Fleet with `capacity-optimized` allocation.",
   "For planned needs (GPU training, events), create an On-Demand Capacity Reservation: `aws ec2 create-capacity-reservation --instance-type p4d.24xlarge --instance-platform Linux/UNIX --availability-zone us-east-1b --instance-count 2`.",
   "Do not file a quota increase — it will not help."],
  "Business-critical capacity is unavailable for more than an hour in all suitable AZs.",
  "aws capacity ec2 availability-zone capacity-reservation cloud",
  ["us-east-1a", "eu-west-1b", "ap-northeast-1c"],
  ["can't start my GPU box after the weekend, InsufficientInstanceCapacity in {h}. did we hit a quota?",
   "Insufficient capacity launching p4d in {h}. we need it for the training run today"],
  "InsufficientInstanceCapacity means AWS has no spare capacity of that type in {h} right now — it is not a quota problem. Retry later, switch to another AZ or an alternative instance type (mixed-instances/capacity-optimized), and use an On-Demand Capacity Reservation for planned GPU needs.",
  ("SEV4", "GPU capacity unavailable in {h}", "A model training run started 9 hours late because no p4d capacity was available."))

A(C, "GCP quota exceeded (CPUS / IN_USE_ADDRESSES)",
  ["ERROR: (gcloud.compute.instances.create) Could not fetch resource: - Quota 'CPUS' exceeded. Limit: 24.0 in region europe-west1.",
   "GKE node pool: 'Insufficient regional quota to satisfy request: resource \"IN_USE_ADDRESSES\": request requires '3.0' and is short '1.0''",
   "googleapi: Error 403: Quota exceeded for quota metric 'Queries' and limit 'Queries per minute'"],
  "A regional or per-project quota (CPUS, N2_CPUS, IN_USE_ADDRESSES, SSD_TOTAL_GB, GPUs) or an API rate quota is exhausted.",
  ["Check usage vs limit: `gcloud compute regions describe europe-west1 --format=\"table(quotas.metric,quotas.limit,quotas.usage)\"`.",
   "Release unused resources (stopped VMs still count external IPs; `gcloud compute addresses list --filter=status=RESERVED`).",
   "Request an increase: Console > IAM & Admin > Quotas & System Limits (or `gcloud alpha quotas preferences create --service=compute.googleapis.com --quota-id=CPUS-per-project-region --preferred-value=64 --dimensions=region=europe-west1 --project=acme-prod`).",
   "For API rate quotas, add exponential backoff and batch requests."],
  "GPU quota increases require a billing/account review or the quota blocks production scaling.",
  "gcp quota cpus compute limits gke cloud",
  ["europe-west1", "us-central1", "asia-southeast1"],
  ["gke autoscaler can't add nodes in {h}: IN_USE_ADDRESSES short 1.0",
   "Quota 'CPUS' exceeded. Limit: 24.0 in region {h}. what's a quota"],
  "A regional project quota in {h} is exhausted; compare usage and limits with `gcloud compute regions describe {h}`. Release unused resources (e.g. reserved external IPs) and request a quota increase via Quotas & System Limits; for API rate quotas add backoff and batching.",
  ("SEV3", "GCP regional quota blocked scale-up in {h}", "A GKE cluster could not add nodes for 3 hours during a traffic spike."))

A(C, "Azure deployment fails: regional vCPU quota exceeded",
  ["(OperationNotAllowed) Operation could not be completed as it results in exceeding approved Total Regional Cores quota. Additional details - Location: westeurope, Current Limit: 100, Current Usage: 96, Additional Required: 8",
   "'Operation could not be completed as it results in exceeding approved standardDSv5Family Cores quota'",
   "AKS node pool scale fails with QuotaExceeded"],
  "Azure enforces per-subscription, per-region quotas for total regional vCPUs and per VM family; the deployment would exceed one of them.",
  ["Check usage: `az vm list-usage --location westeurope -o table` (look at Total Regional vCPUs and the family line).",
   "Deallocate unused VMs (`az vm deallocate`) — stopped but not deallocated VMs still count.",
   "Request an increase: Portal > Subscriptions > Usage + quotas > Request increase (or `az quota update` with the Microsoft.Quota provider).",
   "Alternatively choose a VM family/region with available quota."],
  "The quota increase is rejected for capacity reasons in the region.",
  "azure quota vcpu cores aks limits cloud",
  ["westeurope", "northeurope", "eastus2"],
  ["bicep deployment fails: exceeding approved Total Regional Cores quota in {h}",
   "AKS won't scale up the user node pool, QuotaExceeded standardDSv5Family"],
  "The subscription's vCPU quota in {h} (total regional or per-family) would be exceeded; check with `az vm list-usage --location {h} -o table`. Deallocate unused VMs, request an increase via Usage + quotas (or `az quota update`), or use a family/region with headroom.",
  ("SEV4", "Azure core quota blocked AKS scale-out in {h}", "Nightly batch on AKS ran with half the nodes until the quota was raised."))

A(C, "API throttling: ThrottlingException / Rate exceeded",
  ["botocore.exceptions.ClientError: An error occurred (ThrottlingException) when calling the DescribeInstances operation (reached max retries: 4): Rate exceeded",
   "RequestLimitExceeded: Request limit exceeded.",
   "CloudTrail shows thousands of Describe* calls per minute from one role"],
  "The account is exceeding the API request rate (token bucket) for that action, usually because of tight polling loops, many parallel automation jobs, or misconfigured exporters, and retries without backoff make it worse.",
  ["Find the caller: CloudTrail Lake or Athena `SELECT useridentity.arn, eventname, count(*) FROM cloudtrail WHERE errorcode IN ('ThrottlingException','RequestLimitExceeded') GROUP BY 1,2 ORDER BY 3 DESC`.",
   "Enable SDK adaptive retries: `export AWS_RETRY_MODE=adaptive AWS_MAX_ATTEMPTS=10` (boto3 `Config(retries={'mode':'adaptive','max_attempts':10})`).",
   "Reduce call volume: cache describe results, use filters/pagination, replace polling with EventBridge events, and lower exporter scrape frequency.",
   "If the volume is legitimate, request a higher API rate limit via AWS Support (for EC2 API, Service Quotas where available)."],
  "Throttling affects AWS control-plane operations needed for incident recovery (e.g. scaling) across the account.",
  "aws throttling rate-limit api retries cloud",
  ["cloud-custodian", "prometheus-ec2-exporter", "inventory-lambda"],
  ["our scripts randomly fail with ThrottlingException Rate exceeded on DescribeInstances. aws having problems?",
   "{h} errors RequestLimitExceeded all day since we added more accounts"],
  "The account is exceeding the API rate for that action; find the heavy caller in CloudTrail (throttled events grouped by principal and action — likely {h}). Enable adaptive retries (`AWS_RETRY_MODE=adaptive`, more max attempts), cache/filter describe calls or switch polling to EventBridge, and request a higher limit only if the volume is legitimate.",
  ("SEV3", "EC2 API throttling caused by {h}", "Auto Scaling and deploy tooling were throttled for 40 minutes, delaying scale-out."))

A(C, "Auto Scaling group not scaling out",
  ["CloudWatch alarm in ALARM state (CPU > 70%) but desired capacity does not increase",
   "`aws autoscaling describe-scaling-activities` shows nothing new or 'Launching a new EC2 instance ... failed'",
   "Desired capacity already equals MaxSize"],
  "The group is already at MaxSize, the scaling policy is in cooldown/warm-up or attached to a different alarm, or launches fail (quota, invalid launch template, no capacity in subnets).",
  ["Check limits and policy: `aws autoscaling describe-auto-scaling-groups --auto-scaling-group-names web-prod --query 'AutoScalingGroups[0].[MinSize,MaxSize,DesiredCapacity]'` and `aws autoscaling describe-policies --auto-scaling-group-name web-prod`.",
   "Read recent activity and failure reasons: `aws autoscaling describe-scaling-activities --auto-scaling-group-name web-prod --max-items 10`.",
   "If at max, raise MaxSize (`aws autoscaling update-auto-scaling-group --auto-scaling-group-name web-prod --max-size 30`) via IaC.",
   "Fix launch failures shown in the activity (launch template AMI deleted, subnet out of IPs, vCPU quota).",
   "Check suspended processes: `--query 'AutoScalingGroups[0].SuspendedProcesses'` and resume with `aws autoscaling resume-processes`."],
  "Scaling is blocked by quota or capacity during a production peak.",
  "aws autoscaling asg scaling-policy capacity cloud",
  ["web-prod", "api-workers-prod", "render-farm"],
  ["site is slow, CPU is 95% on all web boxes but the {h} autoscaling group doesn't add instances",
   "{h} stuck at 10 instances even though the alarm fires"],
  "Check {h}'s Min/Max/Desired and policies (`describe-auto-scaling-groups`, `describe-policies`) and read `describe-scaling-activities` for failures. Raise MaxSize if it is at the ceiling, fix launch failures shown in the activity (deleted AMI, subnet out of IPs, quota) and resume any suspended processes.",
  ("SEV2", "{h} failed to scale out under load", "Response times exceeded 4 s for 35 minutes because the group was capped at MaxSize."))

A(C, "ASG instances launched and terminated in a loop (failing ELB health checks)",
  ["Scaling activities: 'Terminating EC2 instance: i-0... Cause: an instance was taken out of service in response to an ELB system health check failure.'",
   "New instances live only a few minutes; desired capacity never stabilises",
   "Application needs ~5 minutes to warm up but HealthCheckGracePeriod is 60 s"],
  "The ASG uses ELB health checks and the instance fails them before the application finishes booting (grace period too short) or because the health check path is wrong, so the ASG replaces it endlessly.",
  ["Read the reason in `aws autoscaling describe-scaling-activities --auto-scaling-group-name api-workers-prod`.",
   "Compare boot time with the grace period: `--query 'AutoScalingGroups[0].[HealthCheckType,HealthCheckGracePeriod]'`; raise it (`update-auto-scaling-group --health-check-grace-period 420`) or use a lifecycle hook / default instance warmup.",
   "Verify the target group health check path works on a fresh instance (`curl -i localhost:8080/healthz` via SSM Session Manager).",
   "To debug a failing instance, temporarily suspend replacement: `aws autoscaling suspend-processes --auto-scaling-group-name api-workers-prod --scaling-processes ReplaceUnhealthy` (resume afterwards)."],
  "Instances fail health checks because of an application/AMI regression that needs a rollback.",
  "aws autoscaling asg health-check grace-period elb cloud",
  ["api-workers-prod", "web-prod", "search-nodes"],
  ["{h} keeps creating and killing instances every few minutes. AWS bug??",
   "our asg is flapping, instances terminated due to ELB health check failure right after boot"],
  "{h} replaces instances that fail ELB health checks before the app finishes booting; compare `HealthCheckGracePeriod` with the real boot time and check the health path on a fresh instance. Raise the grace period (or use instance warmup/lifecycle hooks), fix the health check, and suspend ReplaceUnhealthy only temporarily while debugging.",
  ("SEV3", "Launch/terminate loop in {h}", "Capacity oscillated for an hour after a slower-booting AMI was rolled out."))

A(C, "Kubernetes HPA shows <unknown> metrics and does not scale",
  ["`kubectl get hpa` shows TARGETS `<unknown>/70%`",
   "HPA event: 'failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)'",
   "Event: 'failed to get cpu utilization: missing request for cpu in container app of Pod ...'"],
  "The HPA cannot compute utilisation because metrics-server is missing/unhealthy (no metrics.k8s.io API) or the target containers have no CPU requests set, which utilisation targets require.",
  ["Check metrics API: `kubectl get apiservice v1beta1.metrics.k8s.io` and `kubectl top pods -n shop`.",
   "If unavailable, check metrics-server: `kubectl -n kube-system logs deploy/metrics-server` (common: 'x509: cannot validate certificate ... doesn't contain any IP SANs' → fix kubelet serving certs or use `--kubelet-insecure-tls` only in dev).",
   "Ensure every container in the pod (including sidecars) has `resources.requests.cpu` set.",
   "Verify: `kubectl describe hpa checkout -n shop` shows current utilisation and scaling events."],
  "Metrics-server is managed by the platform team and is down cluster-wide.",
  "kubernetes hpa autoscaling metrics-server requests cloud",
  ["checkout", "search-api", "notifications"],
  ["HPA for {h} shows <unknown>/70% and never scales. we had a traffic spike and it stayed at 2 pods",
   "kubectl get hpa {h}: unknown targets. missing request for cpu?"],
  "The HPA for {h} cannot compute utilisation: check the metrics API (`kubectl get apiservice v1beta1.metrics.k8s.io`, `kubectl top pods`) and metrics-server logs, and make sure every container including sidecars has `resources.requests.cpu`. Verify with `kubectl describe hpa` that current utilisation appears.",
  ("SEV3", "HPA for {h} unable to scale", "The service stayed at 2 replicas through a 4x traffic spike; error rate reached 7%."))

A(C, "Cluster Autoscaler not adding nodes (pods Pending)",
  ["Pod event: '0/6 nodes are available: 6 Insufficient cpu. preemption: 0/6 nodes are available: 6 No preemption victims found for incoming pod.'",
   "cluster-autoscaler event on pod: 'pod didn't trigger scale-up: 2 max node group size reached, 1 node(s) didn't match Pod's node affinity/selector'",
   "Karpenter log: 'could not schedule pod, incompatible with nodepool \"default\"'"],
  "The autoscaler cannot find a node group that both fits the pod and has room to grow: node groups are at max size, the pod's nodeSelector/affinity/tolerations match no group, or the requested resources exceed the largest instance type.",
  ["Read the reason on the pod: `kubectl describe pod <pod> -n batch | sed -n '/Events/,$p'`.",
   "Check autoscaler logs/status: `kubectl -n kube-system logs deploy/cluster-autoscaler | grep -i scale-up` and `kubectl -n kube-system get cm cluster-autoscaler-status -o yaml`.",
   "Raise the node group maximum (EKS: `aws eks update-nodegroup-config --cluster-name prod --nodegroup-name general --scaling-config minSize=3,maxSize=30,desiredSize=6` via IaC), or fix selectors/tolerations so the pod matches an existing group.",
   "If requests exceed the biggest node, reduce requests or add a node group with larger instances."],
  "Node groups cannot grow due to quota or subnet IP exhaustion.",
  "kubernetes cluster-autoscaler karpenter pending nodes autoscaling cloud",
  ["batch-worker", "spark-executor", "ml-inference"],
  ["{h} pods stuck Pending for an hour, '0/6 nodes are available: 6 Insufficient cpu'. cluster full?",
   "autoscaler won't add nodes, event says max node group size reached"],
  "The Pending {h} pods' events and the cluster-autoscaler status show why no scale-up happened (max node group size reached, no matching selector/affinity, or requests larger than any node). Raise the node group maximum via IaC, fix the pod's selectors/tolerations, or add a node group with larger instances.",
  ("SEV3", "{h} pods Pending: node group at max size", "Nightly batch jobs were delayed 3 hours because the node group maximum had not been raised after growth."))

A(C, "EC2 Spot instance interruptions",
  ["EventBridge 'EC2 Spot Instance Interruption Warning' events; instance terminated 2 minutes later",
   "Instance metadata `http://169.254.169.254/latest/meta-data/spot/instance-action` returns {\"action\": \"terminate\", \"time\": \"2025-03-04T10:17:00Z\"}",
   "Kubernetes nodes disappear abruptly, pods restarted without graceful drain"],
  "Spot capacity is reclaimed by AWS when demand rises in that capacity pool; fleets concentrated on one instance type/AZ get interrupted together and workloads without interruption handling lose in-flight work.",
  ["Check interruption rates per pool (Spot Instance Advisor) and the EventBridge history.",
   "Diversify: mixed instances policy with 6-10 similar types across all AZs and `SpotAllocationStrategy: price-capacity-optimized`; enable Capacity Rebalancing.",
   "Handle the 2-minute notice: on EKS use Karpenter interruption handling or aws-node-termination-handler (queue mode) so nodes are cordoned and drained.",
   "Keep a baseline of On-Demand for stateful or latency-critical components (`OnDemandBaseCapacity`).",
   "Make jobs checkpoint and idempotent."],
  "Interruptions cause customer impact for a workload that must be moved to On-Demand (cost decision).",
  "aws spot interruption capacity-rebalancing karpenter autoscaling cloud",
  ["ci-runners-spot", "spark-spot-pool", "render-farm"],
  ["our {h} nodes keep vanishing mid-job, we lose 2h of work each time",
   "spot instances in {h} all terminated at the same moment, half our builds failed"],
  "{h} is losing Spot capacity in a concentrated pool. Diversify across several instance types and all AZs with price-capacity-optimized allocation and Capacity Rebalancing, handle the 2-minute notice (Karpenter or aws-node-termination-handler to cordon and drain), keep an On-Demand base for critical parts and make jobs checkpoint.",
  ("SEV4", "Mass Spot interruption in {h}", "40% of CI builds failed for an hour when a single-type Spot pool was reclaimed."))

A(C, "S3 403 AccessDenied due to bucket policy conditions (TLS / VPC endpoint)",
  ["An error occurred (AccessDenied) when calling the PutObject operation: Access Denied — IAM simulation allows it",
   "Bucket policy contains Deny with Condition `\"Bool\": {\"aws:SecureTransport\": \"false\"}` or `\"StringNotEquals\": {\"aws:SourceVpce\": \"vpce-0a1b2c3d\"}`",
   "Access works from the VPC but not from a laptop/CI runner (or vice versa)"],
  "An explicit Deny in the bucket policy overrides identity permissions; common conditions are requiring HTTPS, requiring a specific VPC endpoint/source VPC, or requiring SSE-KMS headers on upload.",
  ["Read the bucket policy: `aws s3api get-bucket-policy --bucket acme-invoices-prod --query Policy --output text | jq .`.",
   "Match the request against each Deny condition (endpoint used, `aws:SourceVpce`, `s3:x-amz-server-side-encryption`, `aws:PrincipalOrgID`).",
   "Fix the client rather than the policy: route through the VPC endpoint, use HTTPS, or send the required header (`aws s3 cp file s3://acme-invoices-prod/ --sse aws:kms --sse-kms-key-id alias/invoices`).",
   "If the policy must change, do it via IaC and validate with IAM Access Analyzer (`aws accessanalyzer validate-policy --policy-type RESOURCE_POLICY --policy-document file://policy.json`).",
   "Check Block Public Access settings if the change involves public access (`aws s3api get-public-access-block`)."],
  "The bucket holds regulated data or the requested change relaxes a deny condition (e.g. access from outside the VPC).",
  "aws s3 bucket-policy accessdenied vpc-endpoint encryption object-storage cloud",
  ["acme-invoices-prod", "acme-logs-archive", "acme-ml-datasets"],
  ["AccessDenied uploading to {h} from the CI runner, but my IAM role has s3:* !!",
   "can read {h} from EC2 but from my laptop I get Access Denied. I'm admin"],
  "An explicit Deny in {h}'s bucket policy (e.g. aws:SourceVpce, aws:SecureTransport or required SSE-KMS header) overrides the role's permissions; read it with `aws s3api get-bucket-policy` and match the request against each condition. Fix the client (go through the VPC endpoint, use HTTPS, pass `--sse aws:kms --sse-kms-key-id ...`) rather than loosening the policy, and validate any policy change with IAM Access Analyzer.",
  ("SEV3", "Uploads to {h} denied by bucket policy", "Invoice generation failed for 2 hours after a CI runner moved outside the VPC endpoint path."),
  ("please remove the aws:SourceVpce condition from {h} policy so our partner agency can upload directly from their office",
   "Removing the VPC-endpoint restriction would expose a protected bucket to access from outside our network, which is a security decision. Escalate to the Cloud Platform team and Security to design partner access (e.g. presigned URLs or a dedicated upload bucket) instead of relaxing the policy."))

A(C, "S3 objects uploaded by another account are unreadable (object ownership)",
  ["Bucket owner gets AccessDenied on GetObject for objects written by a partner account",
   "`aws s3api get-object-acl --bucket acme-partner-drop --key file.csv` shows Owner is the partner's canonical ID",
   "Replication/Athena queries fail only for files delivered cross-account"],
  "With legacy ACL-based ownership the uploading account owns the object, so the bucket owner has no access unless the writer sets `bucket-owner-full-control`; the modern fix is Object Ownership = BucketOwnerEnforced, which disables ACLs.",
  ["Check the setting: `aws s3api get-bucket-ownership-controls --bucket acme-partner-drop`.",
   "Enable BucketOwnerEnforced: `aws s3api put-bucket-ownership-controls --bucket acme-partner-drop --ownership-controls 'Rules=[{ObjectOwnership=BucketOwnerEnforced}]'` (first confirm no workload relies on ACLs).",
   "Existing objects become owned by the bucket owner automatically once enforced; for already-uploaded objects in legacy mode, the writer can re-copy with `--acl bucket-owner-full-control`.",
   "Update the bucket policy to grant the partner only s3:PutObject on its prefix."],
  "Changing ownership controls affects other consumers that rely on ACLs.",
  "aws s3 object-ownership acl cross-account object-storage cloud",
  ["acme-partner-drop", "acme-vendor-feeds", "acme-shared-exports"],
  ["we can't open the files the vendor drops into {h}, AccessDenied, even though we own the bucket",
   "athena query over {h} fails with access denied only on the new partner files"],
  "Objects in {h} written by the partner are owned by the partner account under ACL-based ownership; confirm with `get-object-acl` / `get-bucket-ownership-controls`. Set Object Ownership to BucketOwnerEnforced (`put-bucket-ownership-controls`), which makes the bucket owner own all objects, and grant the partner only PutObject on its prefix.",
  ("SEV4", "Partner files in {h} unreadable", "Daily vendor reconciliation failed for 3 days until object ownership was enforced."))

A(C, "S3 AccessDenied on KMS-encrypted objects (kms:Decrypt missing)",
  ["An error occurred (AccessDenied) when calling the GetObject operation: User ... is not authorized to perform: kms:Decrypt on resource: arn:aws:kms:eu-west-1:123456789012:key/1234abcd-... because no identity-based policy allows the kms:Decrypt action",
   "Plain objects in the bucket download fine; SSE-KMS objects fail",
   "Cross-account reader gets 'Access Denied' even though the bucket policy grants s3:GetObject"],
  "Objects encrypted with SSE-KMS require kms:Decrypt (and kms:GenerateDataKey for uploads) on the key; the caller's policy or the key policy does not allow it, and cross-account use requires both the key policy and the caller's IAM policy to grant it (the AWS-managed aws/s3 key cannot be shared cross-account).",
  ["Check which key encrypted the object: `aws s3api head-object --bucket acme-ml-datasets --key x.parquet --query '[ServerSideEncryption,SSEKMSKeyId]'`.",
   "Read the key policy: `aws kms get-key-policy --key-id <key-id> --policy-name default --output text`.",
   "Grant kms:Decrypt (and kms:GenerateDataKey for writers) to the role in its IAM policy and, where the key policy does not delegate to IAM or for cross-account, in the key policy (via IaC).",
   "For cross-account sharing, the object must use a customer-managed key, not aws/s3.",
   "Retest with `aws s3 cp s3://acme-ml-datasets/x.parquet -`."],
  "The key policy belongs to another team/account or the key protects regulated data.",
  "aws kms s3 encryption kms-decrypt accessdenied object-storage cloud",
  ["acme-ml-datasets", "acme-invoices-prod", "acme-logs-archive"],
  ["can download some files from {h} but others give AccessDenied with kms:Decrypt. weird",
   "partner account can't read our shared bucket {h}, bucket policy is fine I checked"],
  "The failing objects in {h} are SSE-KMS encrypted and the caller lacks kms:Decrypt on that key; confirm the key with `head-object` and read `aws kms get-key-policy`. Grant kms:Decrypt (and GenerateDataKey for writers) in the IAM policy and the key policy as needed; cross-account sharing requires a customer-managed key, not aws/s3.",
  ("SEV3", "KMS permissions blocked reads from {h}", "Model training jobs failed for a day after data was re-encrypted with a new CMK."))

A(C, "KMS key disabled or pending deletion",
  ["KMSInvalidStateException: arn:aws:kms:eu-west-1:123456789012:key/5678efgh-... is pending deletion.",
   "'DisabledException: arn:aws:kms:...:key/... is disabled.'",
   "RDS/EBS: 'The volume's KMS key is not accessible' / instance stuck in incompatible-parameters"],
  "Someone disabled the customer-managed key or scheduled it for deletion (7-30 day waiting period); every encrypt/decrypt using it fails, and after deletion data encrypted with it becomes unrecoverable.",
  ["Check state: `aws kms describe-key --key-id <key-id> --query 'KeyMetadata.[KeyState,DeletionDate]'`.",
   "If PendingDeletion, cancel immediately: `aws kms cancel-key-deletion --key-id <key-id>` — the key returns in Disabled state.",
   "Re-enable: `aws kms enable-key --key-id <key-id>`.",
   "Find who did it in CloudTrail (ScheduleKeyDeletion / DisableKey) and protect keys with a key policy/SCP denying kms:ScheduleKeyDeletion except to break-glass roles.",
   "Restart affected services (RDS may need a reboot to leave the inaccessible-encryption-credentials state)."],
  "The key has already been deleted, or the action was not performed by a known administrator.",
  "aws kms key-deletion disabled encryption cloud",
  ["alias/orders-db", "alias/invoices", "alias/ebs-default-prod"],
  ["everything using {h} fails with KMSInvalidStateException pending deletion!! who did this",
   "app can't read from S3 or secrets manager, error says key is disabled"],
  "{h} was disabled or scheduled for deletion; check with `aws kms describe-key --query KeyMetadata.[KeyState,DeletionDate]`. Cancel deletion immediately (`aws kms cancel-key-deletion`), re-enable it (`aws kms enable-key`), restart affected services, and use CloudTrail to find who did it and add a policy that denies ScheduleKeyDeletion outside break-glass.",
  ("SEV1", "KMS key {h} scheduled for deletion", "Encrypted database and object reads failed for 25 minutes; deletion was cancelled 3 days before the key would have been destroyed."),
  ("KMS key {h} shows PendingDeletion and CloudTrail says ScheduleKeyDeletion was called by an IAM user nobody knows",
   "A destructive KMS action by an unknown principal indicates a likely account compromise. Cancel the key deletion immediately, then escalate to Security Operations (SOC) and the Cloud Platform team as a security incident."))

A(C, "S3 503 SlowDown errors",
  ["An error occurred (SlowDown) when calling the PutObject operation (reached max retries: 4): Please reduce your request rate.",
   "HTTP 503 Slow Down responses in Spark/Hadoop S3A logs",
   "Sudden spike of requests to a single key prefix (e.g. one partition/date prefix)"],
  "S3 supports at least 3,500 PUT/COPY/POST/DELETE and 5,500 GET/HEAD requests per second per partitioned prefix; bursts above that on a single prefix (before S3 scales out) return 503 SlowDown.",
  ["Identify the hot prefix with S3 server access logs or CloudWatch request metrics (enable request metrics with a prefix filter).",
   "Enable exponential backoff with jitter (SDK adaptive retry mode; S3A `fs.s3a.retry.throttle.limit`).",
   "Spread keys across more prefixes (e.g. hash or partition keys up front) and avoid many small objects — compact into larger files.",
   "Ramp up request rates gradually for new prefixes; for Spark, reduce concurrent writers or enable the S3A magic committer."],
  "SlowDown persists at moderate rates or affects a production pipeline despite backoff and prefix changes.",
  "aws s3 slowdown 503 throttling prefix object-storage cloud",
  ["acme-clickstream-raw", "acme-datalake-bronze", "acme-thumbnails"],
  ["our spark job writing to {h} fails with 503 Slow Down. is S3 down?",
   "lots of 'Please reduce your request rate' from the uploader into {h}"],
  "{h} is receiving more requests per second on one prefix than S3 has scaled for, so it returns 503 SlowDown. Use exponential backoff with jitter (adaptive retries), spread keys across more prefixes and compact small files, and ramp up request rates / writer concurrency gradually.",
  ("SEV4", "S3 SlowDown on {h}", "Clickstream ingestion lagged 2 hours during a replay that wrote millions of small objects to one prefix."))

A(C, "S3 storage cost growing: noncurrent versions and incomplete multipart uploads",
  ["Bucket size in CloudWatch (BucketSizeBytes) keeps growing though objects are 'deleted'",
   "S3 Storage Lens shows large 'Noncurrent version bytes' and 'Incomplete multipart upload bytes'",
   "`aws s3 ls --recursive --summarize` shows far less data than the bill"],
  "With versioning enabled, deletes only add delete markers and overwrites keep noncurrent versions; failed multipart uploads keep their parts — all billed until a lifecycle rule expires them.",
  ["Check versioning and lifecycle: `aws s3api get-bucket-versioning --bucket acme-logs-archive` and `aws s3api get-bucket-lifecycle-configuration --bucket acme-logs-archive`.",
   "List incomplete uploads: `aws s3api list-multipart-uploads --bucket acme-logs-archive`.",
   "Add lifecycle rules: NoncurrentVersionExpiration (e.g. NoncurrentDays 30), AbortIncompleteMultipartUpload (DaysAfterInitiation 7) and ExpiredObjectDeleteMarker true: `aws s3api put-bucket-lifecycle-configuration --bucket acme-logs-archive --lifecycle-configuration file://lifecycle.json`.",
   "Consider transitions to STANDARD_IA/GLACIER_IR for old current versions.",
   "Verify with Storage Lens over the next days (lifecycle actions are asynchronous)."],
  "The bucket is under legal hold/Object Lock or a retention policy that forbids expiring versions.",
  "aws s3 lifecycle versioning multipart cost object-storage cloud",
  ["acme-logs-archive", "acme-backups-prod", "acme-build-artifacts"],
  ["finance asks why {h} costs 4x more than last year. we delete old stuff every week",
   "s3 bill is huge for {h} but aws s3 ls shows only 2 TB"],
  "{h} is retaining noncurrent versions, delete markers and incomplete multipart uploads, which are billed but not shown by `aws s3 ls`. Add lifecycle rules for NoncurrentVersionExpiration, AbortIncompleteMultipartUpload and ExpiredObjectDeleteMarker (plus storage-class transitions) with `put-bucket-lifecycle-configuration`, and verify in Storage Lens over the following days.",
  ("SEV4", "Unbounded storage growth in {h}", "Monthly S3 spend for the bucket grew from $2k to $9k before lifecycle rules were added."),
  ("{h} is huge because of old versions, but it's the bucket with Object Lock compliance mode for the financial audit. can I add a lifecycle rule to delete versions?",
   "Versions under Object Lock compliance retention cannot and must not be deleted early, and changing retention on audit data is a compliance decision. Escalate to the Cloud Platform team together with Compliance/Legal to review the retention period before any lifecycle change."))

A(C, "Azure Blob 403 AuthorizationPermissionMismatch (data-plane role missing)",
  ["Status: 403 (This request is not authorized to perform this operation using this permission.) ErrorCode: AuthorizationPermissionMismatch",
   "`az storage blob list --auth-mode login` fails while the portal shows the user as Owner/Contributor",
   "Managed identity can manage the storage account but cannot read blobs"],
  "Owner/Contributor are control-plane roles; reading or writing blob data with Entra ID auth requires a data-plane role such as Storage Blob Data Reader/Contributor at the account or container scope.",
  ["List the principal's roles on the account: `az role assignment list --assignee <objectId> --scope <storage-account-id> -o table`.",
   "Assign the data role: `az role assignment create --assignee <objectId> --role \"Storage Blob Data Contributor\" --scope <storage-account-id>/blobServices/default/containers/ingest`.",
   "Wait up to 10 minutes for propagation and retry with `az storage blob list --account-name acmedata --container-name ingest --auth-mode login`.",
   "Do not fall back to account keys or SAS tokens as a workaround."],
  "The storage account is in a subscription owned by another team or holds regulated data.",
  "azure blob storage rbac data-plane managed-identity object-storage cloud",
  ["acmedata", "acmelogsweu", "acmebackupstg"],
  ["I'm Owner on storage account {h} but listing blobs gives AuthorizationPermissionMismatch??",
   "function app managed identity can't read container in {h}, 403"],
  "Owner/Contributor on {h} are control-plane roles; blob data access with Entra auth needs a data-plane role. Assign Storage Blob Data Reader/Contributor at the container or account scope with `az role assignment create`, wait for propagation and retry with `--auth-mode login`, without falling back to account keys.",
  ("SEV4", "Managed identity denied blob access on {h}", "An ingestion function failed for half a day after switching from account keys to managed identity."))

A(C, "Private subnet cannot reach S3 (gateway endpoint route missing)",
  ["Connect timeout on endpoint URL: \"https://acme-raw-data.s3.eu-west-1.amazonaws.com/...\"",
   "Instances in private subnets without NAT hang on `aws s3 ls` while other AWS APIs (via interface endpoints) work",
   "VPC flow logs show REJECT/no response for traffic to S3 prefix-list ranges"],
  "A gateway VPC endpoint for S3 works only for subnets whose route tables contain the endpoint's prefix-list route; a new subnet/route table was not associated, or the endpoint policy restricts buckets.",
  ["Find the subnet's route table: `aws ec2 describe-route-tables --filters Name=association.subnet-id,Values=subnet-0abc` and look for a `pl-` destination pointing at `vpce-`.",
   "Associate the route table with the endpoint: `aws ec2 modify-vpc-endpoint --vpc-endpoint-id vpce-0s3 --add-route-table-ids rtb-0new`.",
   "Check the endpoint policy allows the bucket: `aws ec2 describe-vpc-endpoints --vpc-endpoint-ids vpce-0s3 --query 'VpcEndpoints[0].PolicyDocument'`.",
   "Make sure security group egress and NACLs allow 443 to the S3 prefix list (`pl-...`).",
   "Retest with `aws s3 ls s3://acme-raw-data --region eu-west-1`."],
  "The VPC/endpoint is managed centrally by the network team (shared VPC).",
  "aws vpc-endpoint s3 gateway-endpoint route-table private-subnet cloud",
  ["subnet-app-private-3c", "subnet-batch-1a", "subnet-eks-nodes-1b"],
  ["new batch instances in {h} can't do aws s3 ls, it just hangs. other subnets work",
   "Connect timeout on endpoint URL s3.eu-west-1.amazonaws.com from the new EKS node subnet"],
  "The route table of {h} is not associated with the S3 gateway endpoint, so traffic to S3 has no path (no NAT). Add the route table with `aws ec2 modify-vpc-endpoint --add-route-table-ids`, check the endpoint policy and that SG/NACL egress allows 443 to the S3 prefix list, and retest `aws s3 ls`.",
  ("SEV3", "S3 unreachable from {h}", "A new batch subnet could not read input data for 4 hours after launch."))

A(C, "Interface VPC endpoint not used (private DNS disabled) — ECR/Secrets Manager timeouts",
  ["Error response from daemon: Get \"https://123456789012.dkr.ecr.eu-west-1.amazonaws.com/v2/\": dial tcp 52.x.x.x:443: i/o timeout",
   "`dig +short secretsmanager.eu-west-1.amazonaws.com` from the instance returns public IPs instead of 10.x addresses",
   "Pods in private subnets fail ImagePullBackOff from ECR while nodes with NAT work"],
  "The interface endpoint exists but Private DNS is disabled (or the VPC lacks enableDnsHostnames/enableDnsSupport, or a custom resolver overrides it), so the service name resolves to public IPs that are unreachable without NAT; ECR also needs the ecr.api, ecr.dkr and S3 gateway endpoints.",
  ["Check resolution from inside the VPC: `dig +short api.ecr.eu-west-1.amazonaws.com` should return endpoint private IPs.",
   "Check the endpoint: `aws ec2 describe-vpc-endpoints --filters Name=service-name,Values=com.amazonaws.eu-west-1.ecr.dkr --query 'VpcEndpoints[].[VpcEndpointId,PrivateDnsEnabled,State]'` and enable: `aws ec2 modify-vpc-endpoint --vpc-endpoint-id vpce-... --private-dns-enabled`.",
   "Verify VPC attributes: `aws ec2 describe-vpc-attribute --vpc-id vpc-... --attribute enableDnsHostnames`.",
   "Ensure the endpoint security group allows 443 from the client subnets, and that ECR pulls also have the S3 gateway endpoint (layers are served from S3).",
   "Retest `docker pull` / secret fetch."],
  "Endpoints live in a shared networking account with centralized Route 53 private hosted zones.",
  "aws vpc-endpoint privatelink private-dns ecr secrets-manager cloud",
  ["vpc-prod-euw1", "vpc-data-euw1", "vpc-shared-svcs"],
  ["nodes in {h} can't pull images from ECR, i/o timeout. ECR outage??",
   "secretsmanager calls time out from private subnet, dig shows public ip"],
  "The interface endpoints in {h} are not being used because Private DNS is disabled (service names resolve to public IPs, unreachable without NAT). Enable private DNS on the endpoint (`modify-vpc-endpoint --private-dns-enabled`), check enableDnsHostnames/Support and the endpoint security group, and for ECR make sure ecr.api, ecr.dkr and the S3 gateway endpoint all exist.",
  ("SEV2", "ECR pulls failing in {h}", "New pods could not start for 50 minutes after a NAT gateway removal; existing pods kept running."))

A(C, "NAT gateway port exhaustion (ErrorPortAllocation)",
  ["CloudWatch metric ErrorPortAllocation > 0 on the NAT gateway",
   "Outbound connections from private subnets intermittently time out, especially to one third-party API",
   "ConnectionEstablishedCount near 55,000 to a single destination IP:port"],
  "A NAT gateway supports up to 55,000 simultaneous connections to each unique destination (IP, port, protocol); high-concurrency clients without connection reuse to one endpoint exhaust source ports.",
  ["Confirm via CloudWatch: `ErrorPortAllocation`, `ActiveConnectionCount`, and identify top talkers with VPC flow logs on the NAT ENI.",
   "Reuse connections in the client (HTTP keep-alive, connection pools) and reduce short-lived connections.",
   "Add secondary private IPs to the NAT gateway (each adds 55,000 connections per destination): `aws ec2 assign-private-nat-gateway-address --nat-gateway-id nat-0... --private-ip-address-count 2` (public NAT requires associating extra EIPs).",
   "Use VPC endpoints for AWS services (S3, DynamoDB, ECR) so that traffic bypasses the NAT."],
  "The third-party destination requires allowlisting new egress IPs before adding NAT addresses.",
  "aws nat-gateway port-exhaustion snat egress vpc cloud",
  ["nat-prod-euw1a", "nat-prod-euw1b", "nat-data-use1a"],
  ["calls from our services to the payments provider randomly time out since traffic grew, only from {h}'s subnets",
   "NAT gateway {h} ErrorPortAllocation alarm firing"],
  "{h} is exhausting its 55,000 source ports per destination (ErrorPortAllocation > 0). Enable connection reuse/pooling in the clients, add secondary IPs/EIPs to the NAT gateway, and move AWS-service traffic to VPC endpoints so that it bypasses the NAT.",
  ("SEV2", "NAT port exhaustion on {h}", "About 6% of payment-provider calls timed out for 2 hours during peak."),
  ("NAT {h} port exhaustion again, we want to add 2 more EIPs but the payment provider only accepts traffic from allowlisted IPs",
   "Adding EIPs would change the egress IPs seen by a provider that enforces an allowlist, so the new IPs must be registered with them first. Escalate to the Cloud Platform team to coordinate the allowlist update with the provider; meanwhile reduce connection churn with keep-alive/pooling."))

A(C, "EC2 instance status check failed (impaired)",
  ["EC2 console: 'Status check failed: 1/2 checks passed' — System reachability check failed",
   "CloudWatch StatusCheckFailed_System = 1; instance unreachable over SSH/SSM",
   "AWS Health: 'EC2 instance scheduled for retirement due to degraded hardware'"],
  "The underlying host has a hardware/network problem (system status check) or the guest OS is broken — kernel panic, full disk, bad fstab (instance status check).",
  ["Identify which check fails: `aws ec2 describe-instance-status --instance-ids i-0abc --include-all-instances`.",
   "System check failed on EBS-backed instance: stop and start (not reboot) to move to healthy hardware: `aws ec2 stop-instances --instance-ids i-0abc && aws ec2 start-instances --instance-ids i-0abc` (instance-store data is lost; public IP changes without an EIP).",
   "Instance check failed: read the console output `aws ec2 get-console-output --instance-id i-0abc --latest --output text` or use EC2 Serial Console to fix fstab/kernel issues.",
   "Configure a CloudWatch alarm with the `recover` action for StatusCheckFailed_System on critical instances."],
  "The instance uses instance-store volumes with unreplicated data, or it's a single point of failure for production.",
  "aws ec2 status-check hardware impaired recovery cloud",
  ["i-0a12b34c56d78e9f0", "bastion-prod", "legacy-ftp-ec2"],
  ["{h} is unreachable, console says 1/2 status checks passed. reboot didn't help",
   "AWS emailed that {h} is scheduled for retirement, what do we do"],
  "Check which status check fails on {h} with `aws ec2 describe-instance-status`. A failed system check on an EBS-backed instance is fixed by stop/start (not reboot), which moves it to healthy hardware; a failed instance check needs the console output or Serial Console to fix the OS. Add a CloudWatch `recover` alarm for critical instances.",
  ("SEV3", "Impaired EC2 host for {h}", "A single-instance legacy service was down 40 minutes until it was stopped and started on new hardware."))

A(C, "GCE VM: 'Request had insufficient authentication scopes'",
  ["google.api_core.exceptions.Forbidden: 403 Request had insufficient authentication scopes.",
   "gcloud on the VM: ERROR: (gcloud.pubsub.topics.publish) PERMISSION_DENIED: Request had insufficient authentication scopes.",
   "The VM's service account has the right IAM role, yet calls fail"],
  "Legacy access scopes on the VM limit which APIs the default credentials can call regardless of IAM; VMs created with the default scopes only get read-only Storage and a few APIs.",
  ["Check scopes: `gcloud compute instances describe vm-etl-1 --zone europe-west1-b --format='value(serviceAccounts[].scopes)'`.",
   "Stop the VM and set cloud-platform scope (IAM then controls access): `gcloud compute instances set-service-account vm-etl-1 --zone europe-west1-b --service-account etl-sa@acme-prod.iam.gserviceaccount.com --scopes cloud-platform`.",
   "Start the VM and retest; update the instance template/Terraform (`scopes = [\"cloud-platform\"]`) so new VMs get it.",
   "Keep permissions least-privilege through IAM roles on the service account."],
  "The VM cannot be stopped (production single instance) without a maintenance window.",
  "gcp gce access-scopes service-account 403 cloud",
  ["vm-etl-1", "vm-reporting-2", "legacy-cron-vm"],
  ["{h} gets 'Request had insufficient authentication scopes' publishing to pubsub. the service account has pubsub.publisher!",
   "gcloud on {h} says insufficient authentication scopes"],
  "Access scopes on {h} restrict what its default credentials may call regardless of IAM; check them with `gcloud compute instances describe --format='value(serviceAccounts[].scopes)'`. Stop the VM, run `gcloud compute instances set-service-account ... --scopes cloud-platform`, start it again and fix the instance template/Terraform so IAM roles control access.",
  ("SEV4", "Access scopes blocked Pub/Sub publishing on {h}", "Event publishing from a legacy VM failed for a day after a new topic was introduced."))

A(C, "Azure Managed Identity credential unavailable",
  ["ManagedIdentityCredential authentication unavailable. No Managed Identity endpoint found.",
   "DefaultAzureCredential failed to retrieve a token from the included credentials. ... ManagedIdentityCredential: ... Identity not found",
   "App works locally (developer az login) but fails in Azure"],
  "No managed identity is assigned to the resource, a user-assigned identity is attached but the client ID is not specified, or the code runs somewhere without the IMDS endpoint (e.g. container without pod identity).",
  ["Check assignment: `az webapp identity show -g rg-app -n app-orders` (or `az vm identity show`).",
   "Enable/assign: `az webapp identity assign -g rg-app -n app-orders` or for user-assigned `--identities <resource-id>`.",
   "For user-assigned identities, set `AZURE_CLIENT_ID=<client-id>` (or `ManagedIdentityCredential(client_id=...)`).",
   "On AKS use Workload Identity (service account annotation `azure.workload.identity/client-id` and federated credential).",
   "Grant the identity the needed role (e.g. Key Vault Secrets User) and restart the app."],
  "The identity needs roles on resources in another subscription you do not own.",
  "azure managed-identity defaultazurecredential entra workload-identity cloud",
  ["app-orders", "func-ingest", "aks-api-pods"],
  ["{h} can't read Key Vault: ManagedIdentityCredential authentication unavailable. works on my laptop",
   "DefaultAzureCredential failed in {h} after we switched to a user assigned identity"],
  "{h} has no usable managed identity: check with `az webapp identity show` (or the VM/AKS equivalent), assign a system or user-assigned identity, and for user-assigned identities set AZURE_CLIENT_ID. On AKS use Workload Identity, grant the identity the needed role (e.g. Key Vault Secrets User) and restart the app.",
  ("SEV3", "{h} unable to authenticate with managed identity", "The service failed to start after a redeploy removed the system-assigned identity; 30 minutes of downtime."))

A(C, "Terraform state lock cannot be acquired",
  ["Error: Error acquiring the state lock: ConditionalCheckFailedException: The conditional request failed",
   "'Lock Info: ID: 3f1c... Path: acme-tfstate/prod/network.tfstate Operation: OperationTypeApply Who: runner@ci-7f9 Created: 2025-05-02 09:14:12'",
   "Pipeline cancelled mid-apply; every later plan fails with the lock error"],
  "A previous Terraform run holding the DynamoDB (or other backend) lock was killed or crashed without releasing it, or another run is genuinely still in progress.",
  ["Read the Lock Info (Who, Created, Operation) and confirm no run is active (CI pipelines, colleagues).",
   "If the holder is dead, release it: `terraform force-unlock 3f1c...` (from the same working directory/backend).",
   "Run `terraform plan` to check for partially applied changes before applying again.",
   "If the state was corrupted, restore the previous version from the versioned state bucket (`aws s3api list-object-versions --bucket acme-tfstate --prefix prod/network.tfstate`)."],
  "The lock belongs to a production apply that is still running or the state file appears corrupted.",
  "terraform state-lock dynamodb iac cloud",
  ["prod/network", "prod/eks", "staging/data"],
  ["terraform for {h} says Error acquiring the state lock. I cancelled the pipeline yesterday. how do I unlock",
   "ConditionalCheckFailedException on every plan for {h}"],
  "A cancelled run left the lock on {h}'s state; read the Lock Info, confirm no run is active, then `terraform force-unlock <ID>`. Run `terraform plan` to detect partially applied changes before applying, and restore a previous state version from the versioned bucket only if the state is corrupted.",
  ("SEV4", "Stale Terraform lock on {h}", "Infrastructure changes were blocked for a morning after a cancelled pipeline left the lock."))

A(C, "CloudFormation stack stuck in UPDATE_ROLLBACK_FAILED",
  ["Stack status UPDATE_ROLLBACK_FAILED; updates blocked: 'Stack ... is in UPDATE_ROLLBACK_FAILED state and can not be updated.'",
   "Events: 'Resource handler returned message: \"...Role ... cannot be found\"' during rollback",
   "A resource was modified or deleted manually outside CloudFormation"],
  "During rollback CloudFormation could not restore a resource to its previous state — typically because it was changed/deleted out of band or a dependency (IAM role, KMS key) is missing.",
  ["Find the failing resource: `aws cloudformation describe-stack-events --stack-name orders-prod --max-items 30`.",
   "Fix the cause if possible (recreate the missing dependency) and retry: `aws cloudformation continue-update-rollback --stack-name orders-prod`.",
   "If the resource cannot be restored, skip it: `aws cloudformation continue-update-rollback --stack-name orders-prod --resources-to-skip OrdersQueuePolicy` (the stack then treats it as rolled back; reconcile drift afterwards).",
   "Run drift detection: `aws cloudformation detect-stack-drift --stack-name orders-prod`."],
  "The stack contains stateful production resources (databases) where skipping could cause data loss.",
  "aws cloudformation rollback drift iac cloud",
  ["orders-prod", "network-baseline", "data-lake-core"],
  ["stack {h} is UPDATE_ROLLBACK_FAILED and I can't deploy anything",
   "cloudformation rollback failed on {h} because someone deleted a role by hand"],
  "Find the resource that failed to roll back in `describe-stack-events` for {h}, fix the missing dependency if possible and run `aws cloudformation continue-update-rollback`; if it cannot be restored, skip it with `--resources-to-skip`. Afterwards run drift detection and reconcile.",
  ("SEV4", "CloudFormation stack {h} blocked", "Deployments for one service were blocked for a day after a manual IAM change."))

A(C, "Lambda throttled or timing out",
  ["Task timed out after 3.00 seconds",
   "TooManyRequestsException: Rate Exceeded (Lambda invoke) / CloudWatch Throttles metric > 0",
   "SQS-triggered function: messages reappear and go to the DLQ after maxReceiveCount"],
  "The function hits its timeout (default 3 s) because of slow downstream calls or cold starts in a VPC, or concurrency is capped by reserved concurrency or the account's regional limit (default 1,000), so invocations are throttled.",
  ["Check metrics: Duration, Throttles, ConcurrentExecutions, and `aws lambda get-function-concurrency --function-name thumbnailer`.",
   "Raise the timeout to match real work (and set the SQS visibility timeout to at least 6x the function timeout): `aws lambda update-function-configuration --function-name thumbnailer --timeout 30`.",
   "Adjust reserved concurrency (`aws lambda put-function-concurrency --function-name thumbnailer --reserved-concurrent-executions 200`) or request a higher account limit via Service Quotas (L-B99A9384).",
   "Add timeouts/retries on downstream calls and consider provisioned concurrency for cold-start sensitive paths."],
  "Throttling is at the account-level concurrency limit affecting other production functions.",
  "aws lambda timeout throttling concurrency serverless cloud",
  ["thumbnailer", "webhook-ingest", "invoice-pdf"],
  ["{h} lambda fails 'Task timed out after 3.00 seconds' on big images",
   "lots of throttles on {h} since the marketing campaign, messages ending up in DLQ"],
  "{h} is either hitting its timeout (default 3 s) or being throttled by reserved/account concurrency; check Duration, Throttles and `get-function-concurrency`. Raise the timeout (keeping the SQS visibility timeout at least 6x), adjust reserved concurrency or request a higher account limit, and add downstream timeouts or provisioned concurrency.",
  ("SEV3", "Throttling of {h}", "Webhook events were delayed by up to 45 minutes and 3% landed in the DLQ during a campaign."))

A(C, "Unexpected cloud spend spike (budget alert)",
  ["AWS Budgets alert: 'Actual cost exceeded 120% of budgeted amount' for the account",
   "Cost Explorer shows a new line item (e.g. EC2 p3/g5 instances, NAT gateway data processing, CloudWatch Logs ingestion)",
   "Cost Anomaly Detection alert with the root cause service and usage type"],
  "Forgotten resources (GPU instances, large EBS volumes, unattached EIPs), chatty logging, or traffic routed through NAT instead of VPC endpoints drive unexpected cost.",
  ["Break the spend down: Cost Explorer grouped by Service, then Usage Type and Resource (`aws ce get-cost-and-usage --time-period Start=2025-05-01,End=2025-05-08 --granularity DAILY --metrics UnblendedCost --group-by Type=DIMENSION,Key=USAGE_TYPE`).",
   "Find owners via tags (`Owner`, `CostCenter`) and CloudTrail (who launched it).",
   "Stop/downsize idle resources after owner confirmation; snapshot before deleting volumes.",
   "Fix structural causes: S3/ECR VPC endpoints for NAT data processing, log retention and sampling for CloudWatch Logs.",
   "Add budgets per team and enforce tagging."],
  "The resources have no identifiable owner and look like they were created by an unknown principal (possible compromise).",
  "aws cost budget anomaly finops cloud",
  ["ml-sandbox", "data-platform-dev", "shared-services"],
  ["got a budget alert for {h}, we're at 180% of the monthly budget and it's the 10th",
   "why is our NAT gateway costing $4k this month in {h}"],
  "Break {h}'s spend down in Cost Explorer by service, usage type and resource, find owners through tags and CloudTrail, and stop or downsize idle resources after owner confirmation. Fix structural causes such as NAT data processing (add VPC endpoints) or log ingestion (retention/sampling) and add per-team budgets.",
  ("SEV4", "Cost anomaly in {h}", "Eight forgotten GPU instances ran for 3 weeks, costing $38k."),
  ("{h} has 30 GPU instances in regions we never use, no tags, CloudTrail says launched by an access key from an IP in another country",
   "Untagged GPU instances in unused regions launched by an unknown key from abroad indicate a compromised credential used for crypto-mining, not a cost problem. Escalate immediately to Security Operations and the Cloud Platform team as a security incident."))

# ---------------------------------------------------------------------------
# INFRASTRUCTURE
# ---------------------------------------------------------------------------

A(I, "Filesystem full: 'No space left on device'",
  ["write error: No space left on device / OSError: [Errno 28] No space left on device",
   "`df -h /` shows Use% 100%",
   "Alert: 'Disk usage on /var above 95%' (node_filesystem_avail_bytes)"],
  "A filesystem filled up, usually from unrotated or verbose logs, core dumps, old packages/container images, or an application writing temp files without cleanup.",
  ["Confirm which filesystem: `df -hT` (and `df -i` to rule out inode exhaustion).",
   "Find the biggest directories on that filesystem only: `du -xh --max-depth=2 /var | sort -h | tail -20`.",
   "Free space safely: `journalctl --vacuum-size=500M`, `apt-get clean` / `dnf clean all`, `docker system prune -af` (hosts with Docker), remove old rotated logs (`find /var/log -name '*.gz' -mtime +14 -delete`).",
   "Fix the source: add/repair logrotate for the application (`/etc/logrotate.d/app` with `daily`, `rotate 7`, `compress`, `missingok`) and test with `logrotate -d /etc/logrotate.d/app`.",
   "If the data is legitimate growth, extend the volume (see the volume-resize article)."],
  "The full filesystem holds database data files (never delete those), or space cannot be freed without deleting business data.",
  "disk df du no-space logrotate linux infrastructure",
  ["web-07", "jenkins-01", "etl-worker-02", "log-relay-01"],
  ["{h} is out of disk, apps crash with No space left on device. can you delete stuff?",
   "CI builds failing on {h}: [Errno 28] No space left on device",
   "disk alert for {h} /var 97%"],
  "Confirm with `df -hT` (and `df -i`) which filesystem on {h} is full, then find the largest directories with `du -xh --max-depth=2 <mount> | sort -h`. Free space safely (journalctl --vacuum-size, package cache clean, docker prune, old rotated logs), fix log rotation for the offending application, and extend the volume if it is legitimate growth.",
  ("SEV3", "Disk full on {h}", "The host stopped writing logs and the application crashed; 45 minutes of partial outage."),
  ("/var/lib/postgresql on db-reporting-01 is at 100%, postgres is down. which files can I delete to get it back?",
   "The full filesystem holds PostgreSQL data files, which must never be deleted by hand (removing WAL or data files corrupts the database). Escalate to the DBA on-call to free space safely (e.g. inactive replication slots, extending the volume)."))

A(I, "Disk full but du shows much less: deleted files still held open",
  ["`df -h` shows /var at 100% but `du -sh /var` reports far less",
   "Deleting a large log file did not free any space",
   "`lsof +L1` lists files marked '(deleted)' with large sizes"],
  "A process still has the deleted file open (often a log removed by hand or by a logrotate config without copytruncate/postrotate signal), so the blocks are not released until the file descriptor is closed.",
  ["List deleted-but-open files: `lsof +L1 | sort -k7 -n | tail` (SIZE column, PID).",
   "Preferred fix: restart or signal the process to reopen logs (`systemctl restart app` or `kill -HUP <pid>` / `systemctl reload`).",
   "If it cannot be restarted, truncate through the fd: `: > /proc/<pid>/fd/<fd>`.",
   "Fix logrotate: use `postrotate systemctl reload app endscript` or `copytruncate` for apps that cannot reopen logs.",
   "Re-check `df -h`."],
  "The process holding the files is a database or another stateful service that cannot be restarted outside a maintenance window.",
  "disk lsof deleted-files df logrotate linux infrastructure",
  ["app-server-03", "haproxy-int-01", "kafka-broker-03"],
  ["I deleted the 40GB log on {h} but df still says 100%. linux bug?",
   "df and du disagree on {h} by like 60GB"],
  "The deleted file is still held open by a process on {h}; find it with `lsof +L1`. Restart/reload that process (or truncate via `: > /proc/<pid>/fd/<fd>` if it cannot restart), then fix logrotate with a postrotate reload or copytruncate.",
  ("SEV4", "Phantom disk usage on {h}", "A manually deleted log kept 60 GB allocated until the process was restarted."))

A(I, "Inode exhaustion: 'No space left on device' with free space",
  ["touch: cannot touch 'x': No space left on device — but `df -h` shows 40% used",
   "`df -i` shows IUse% 100% on the filesystem",
   "Mail queue, PHP session or cache directories with millions of tiny files"],
  "Every file uses an inode and ext4 allocates a fixed number at mkfs time; millions of small files (sessions, cache, mail queue, unpurged temp files) exhaust inodes while blocks are still free.",
  ["Confirm: `df -i /var`.",
   "Find directories with the most files: `find /var -xdev -type f | cut -d/ -f2-4 | sort | uniq -c | sort -n | tail`.",
   "Delete the stale files in batches: `find /var/lib/php/sessions -type f -mmin +1440 -delete` (avoid `rm *`, which fails with 'Argument list too long').",
   "Fix the generator (session GC, cache expiry, cron cleanup, stuck postfix queue `postqueue -p`).",
   "Long term, use XFS (dynamic inodes) or create ext4 with more inodes (`mkfs.ext4 -i 8192`)."],
  "The files belong to an application whose data cannot be deleted without the owner's approval.",
  "inode df-i disk small-files linux infrastructure",
  ["web-07", "mail-relay-01", "cache-node-02"],
  ["{h} says No space left on device but df shows 60% free. weird",
   "cannot create files on {h}, disk not full though"],
  "`df -i` on {h} will show 100% inode usage: millions of small files have exhausted the inodes although blocks are free. Find the directory with `find <mount> -xdev -type f | cut -d/ -f2-4 | sort | uniq -c | sort -n`, delete stale files in batches with `find ... -mmin +N -delete`, and fix the process that generates them (session GC, cache expiry, mail queue).",
  ("SEV3", "Inode exhaustion on {h}", "New sessions could not be created for 1 hour; users were logged out of the web app."))

A(I, "Extend a full disk volume (cloud disk + LVM/partition + filesystem)",
  ["Disk usage steadily above 85% from legitimate data growth",
   "After enlarging the EBS/Azure/GCE disk, `df -h` still shows the old size",
   "`lsblk` shows the disk larger than the partition"],
  "Growing the virtual disk does not grow the partition, LVM volume or filesystem on it; each layer must be extended in order.",
  ["Resize the cloud disk (e.g. `aws ec2 modify-volume --volume-id vol-0abc --size 500`) and wait for state 'optimizing'/'completed'.",
   "Grow the partition: `growpart /dev/nvme1n1 1` (check with `lsblk`).",
   "With LVM: `pvresize /dev/nvme1n1p1` then `lvextend -r -l +100%FREE /dev/vg_data/lv_data` (-r resizes the filesystem).",
   "Without LVM grow the filesystem online: `resize2fs /dev/nvme1n1p1` (ext4) or `xfs_growfs /data` (XFS takes the mount point).",
   "Verify with `df -h`."],
  "The volume is at the provider's maximum size, or it backs a database cluster where storage changes need DBA coordination.",
  "disk resize lvm growpart resize2fs xfs ebs infrastructure",
  ["build-cache-01", "minio-03", "grafana-01"],
  ["please make the disk on {h} bigger, we're at 90% and it's all real data",
   "we resized the EBS volume of {h} to 500G but df still shows 200G"],
  "Growing the cloud disk of {h} does not grow the partition or filesystem: after `aws ec2 modify-volume` run `growpart`, then `pvresize` + `lvextend -r` for LVM, or `resize2fs` (ext4) / `xfs_growfs <mount>` (XFS) directly. Verify with `df -h`.",
  ("SEV4", "Volume growth required on {h}", "Ingestion paused for 30 minutes while the data volume was extended."))

A(I, "Filesystem remounted read-only after I/O errors",
  ["EXT4-fs error (device sdb1): ext4_journal_check_start:83: Detected aborted journal",
   "EXT4-fs (sdb1): Remounting filesystem read-only",
   "Applications: 'Read-only file system' errors (EROFS); `dmesg` shows 'blk_update_request: I/O error, dev sdb, sector 123456'"],
  "The kernel detected filesystem corruption or underlying I/O errors (failing disk, SAN path loss, cloud volume issue) and remounted the filesystem read-only to prevent further damage.",
  ["Read the kernel log: `dmesg -T | grep -Ei 'ext4|xfs|i/o error|blk_update'` and check multipath/SAN status (`multipath -ll`) or the cloud volume status.",
   "Check disk health: `smartctl -a /dev/sdb` (Reallocated_Sector_Ct, Current_Pending_Sector).",
   "Stop the applications using it, unmount, and run a check: `umount /data && fsck.ext4 -f /dev/sdb1` (XFS: `xfs_repair /dev/sdb1`); do not remount read-write before checking.",
   "If the disk is failing, restore onto new storage from backup rather than repairing in place.",
   "Remount and verify application integrity."],
  "SMART/controller errors indicate hardware failure, or the filesystem holds database data (DBA must validate).",
  "filesystem read-only ext4 io-error fsck smart disk infrastructure",
  ["fileserver-02", "nfs-01", "build-01"],
  ["{h} suddenly says Read-only file system when writing. nothing changed",
   "dmesg on {h} full of I/O error dev sdb and the data mount is read-only now"],
  "The kernel remounted the filesystem on {h} read-only after corruption or I/O errors; check `dmesg -T`, multipath/cloud volume status and `smartctl -a`. Stop the applications, unmount and run `fsck`/`xfs_repair` before remounting read-write, and restore to new storage from backup if the disk is failing.",
  ("SEV2", "Read-only filesystem on {h}", "Writes to a shared build volume failed for 2 hours; builds queued."),
  ("{h} went read-only again, smartctl shows 800 reallocated sectors and pending sectors increasing. it's a physical server in the Leeds rack",
   "Rising reallocated and pending sectors mean the physical disk is failing; fsck would only make things worse. Escalate to the SRE/Infrastructure on-call and data-centre hands for a disk replacement and restore from backup."))

A(I, "Software RAID degraded (mdadm)",
  ["`cat /proc/mdstat` shows [U_] instead of [UU]",
   "`mdadm --detail /dev/md0` reports 'State : clean, degraded' and a member 'faulty' or 'removed'",
   "mdadm monitoring email: 'DegradedArray event on /dev/md0'"],
  "One member disk of the RAID array failed or was kicked out after I/O errors; the array keeps running without redundancy until the disk is replaced and resynced.",
  ["Confirm: `cat /proc/mdstat` and `mdadm --detail /dev/md0`.",
   "Identify the failed disk and its serial: `smartctl -i /dev/sdb` (match the serial with the physical slot label).",
   "Mark and remove it: `mdadm --manage /dev/md0 --fail /dev/sdb1 --remove /dev/sdb1`.",
   "After physical replacement, copy the partition table (`sfdisk -d /dev/sda | sfdisk /dev/sdb`), add the new member (`mdadm --manage /dev/md0 --add /dev/sdb1`) and watch the resync in /proc/mdstat.",
   "Make sure the bootloader is installed on the new disk if the array holds /boot (`grub-install /dev/sdb`)."],
  "A physical disk swap requires on-site data-centre hands, or a second member shows errors during resync.",
  "raid mdadm degraded disk hardware infrastructure",
  ["backup-01", "db-legacy-02", "hypervisor-07"],
  ["got DegradedArray event on /dev/md0 from {h}",
   "{h} /proc/mdstat shows [U_], is that bad?"],
  "The array on {h} has lost a member: confirm with `mdadm --detail /dev/md0`, identify the failed disk's serial with smartctl, and remove it (`mdadm --fail ... --remove`). After the disk is physically replaced, copy the partition table, `mdadm --add` the new member, watch the resync and reinstall GRUB if the array holds /boot.",
  ("SEV3", "Degraded RAID on {h}", "The server ran without redundancy for 2 days awaiting a replacement disk; no data loss."),
  ("DegradedArray on {h} — disk sdb failed. the server is in the colo in Frankfurt, we have no one there",
   "The failed member needs a physical disk swap in a data centre where we have no staff, and the array has no redundancy until then. Escalate to SRE/Infrastructure on-call to arrange colo remote hands and a replacement disk, and verify backups in the meantime."))

A(I, "restic backup fails: repository is already locked",
  ["Fatal: unable to create lock in backend: repository is already locked by PID 21877 on backup-01 by root (UID 0, GID 0)",
   "Nightly backup job exits 1; monitoring shows last successful snapshot several days old",
   "'lock was created at 2025-06-01 02:00:03 (73h0m2s ago)'"],
  "A previous restic run (backup, prune or check) was killed or crashed and left a stale exclusive lock in the repository, blocking all later runs.",
  ["Make sure no restic process is still running for this repo: `pgrep -a restic` on all hosts that use it.",
   "List locks: `restic -r s3:s3.amazonaws.com/acme-backups/restic list locks` and inspect with `restic cat lock <id>`.",
   "Remove stale locks: `restic -r <repo> unlock` (only removes stale locks; `--remove-all` only when you are sure nothing runs).",
   "Run the backup manually and then `restic check` to verify repository integrity.",
   "Add a timeout and alerting on snapshot age to the job."],
  "`restic check` reports errors (pack/index damage) or no valid snapshot exists for critical data.",
  "backup restic lock snapshot infrastructure",
  ["backup-01", "files-eu-01", "gitlab-01"],
  ["backups from {h} haven't run for 3 days, restic says repository is already locked",
   "restic unable to create lock in backend on {h}, what do I do"],
  "A killed restic run left a stale lock on the repository used by {h}; confirm no restic process is still running (`pgrep -a restic`), list locks and run `restic unlock`. Then run the backup manually, verify with `restic check`, and alert on snapshot age.",
  ("SEV3", "Backups of {h} stalled for 3 days", "No new snapshots were taken for 72 hours due to a stale lock; no restore was needed."),
  ("unlocked the repo for {h} but restic check now says 'pack ... contains 3 errors' and 'Fatal: repository contains errors'",
   "Repository errors in `restic check` mean backup data may be damaged, so this is no longer a stale-lock issue. Escalate to the SRE/Infrastructure on-call (backup owners) to assess repair and take a fresh full backup to a new repository."))

A(I, "pg_dump fails: server version mismatch",
  ["pg_dump: error: aborting because of server version mismatch",
   "pg_dump: detail: server version: 16.2; pg_dump version: 14.11",
   "Nightly logical backup stopped working after the database was upgraded"],
  "pg_dump refuses to dump from a server newer than itself; the backup host still runs an older PostgreSQL client after the database major upgrade.",
  ["Check versions: `pg_dump --version` and `psql -c 'SHOW server_version;'`.",
   "Install the matching or newer client, e.g. PGDG repo `apt-get install postgresql-client-16`.",
   "Call the versioned binary explicitly in the job (`/usr/lib/postgresql/16/bin/pg_dump`) since Debian's wrapper may pick an older one.",
   "Run the backup and test a restore (`pg_restore --list dump.custom | head`).",
   "Add the client version to the upgrade checklist."],
  "The restore test fails or backups have been missing longer than the RPO.",
  "postgres pg_dump backup version upgrade database infrastructure",
  ["backup-01", "pg-backup-runner", "ops-tools-01"],
  ["since the database upgrade the backup on {h} fails: pg_dump: error: aborting because of server version mismatch",
   "backup job logs say server version 16.2 pg_dump version 14.11"],
  "The pg_dump client on {h} is older than the upgraded server, which it refuses to dump. Install the matching client (e.g. postgresql-client-16), call the versioned binary explicitly in the job, run the backup and test a restore with `pg_restore --list`.",
  ("SEV3", "Logical backups failing on {h} after Postgres upgrade", "Nightly dumps were missing for 5 days before detection; physical backups were still available."))

A(I, "Cron job works manually but not from cron",
  ["Script runs fine in a shell but the cron run does nothing",
   "Cron mail / syslog: '/bin/sh: 1: pg_dump: not found' or 'aws: command not found'",
   "`grep CRON /var/log/syslog` shows the job started; no output file produced"],
  "Cron runs jobs with a minimal environment (PATH=/usr/bin:/bin, no profile, /bin/sh), so commands in /usr/local/bin or user-installed tools are not found, env vars are missing, and unescaped % characters in the crontab line are turned into newlines.",
  ["Confirm it ran: `grep CRON /var/log/syslog` (Debian/Ubuntu) or `journalctl -u cron` / `/var/log/cron` (RHEL).",
   "Capture output: append `>> /var/log/job.log 2>&1` to the crontab line.",
   "Set PATH at the top of the crontab (`PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`) or use absolute paths in the script.",
   "Escape % as \\% in crontab commands (e.g. `date +\\%F`).",
   "Prefer systemd timers for important jobs (`systemctl list-timers`, `journalctl -u job.service`) and alert on missed runs."],
  "The job is a business-critical batch (e.g. billing) that missed its window.",
  "cron crontab path environment scheduling linux infrastructure",
  ["etl-worker-02", "backup-01", "reporting-01"],
  ["my cron job on {h} doesn't run. if I run the script by hand it works perfectly",
   "cron on {h}: /bin/sh: 1: aws: command not found. but aws is installed!"],
  "Cron on {h} runs with a minimal environment, so tools outside /usr/bin:/bin are not found and unescaped % breaks the line. Set PATH in the crontab or use absolute paths, escape % as \\%, redirect output to a log (`>> /var/log/job.log 2>&1`), and consider a systemd timer with missed-run alerting.",
  ("SEV4", "Scheduled job silently failing on {h}", "A daily export had not run for 2 weeks because of a PATH issue."))

A(I, "PostgreSQL replication lag on a streaming replica",
  ["Alert: replica lag > 300 s (pg_last_xact_replay_timestamp)",
   "On primary: `SELECT client_addr, state, sent_lsn, write_lsn, flush_lsn, replay_lsn, replay_lag FROM pg_stat_replication;` shows replay_lag minutes behind",
   "Replica log: 'canceling statement due to conflict with recovery' or replay paused behind long queries"],
  "The replica cannot replay WAL as fast as it is generated: heavy write bursts (bulk loads, index builds), long-running queries on the replica delaying replay (max_standby_streaming_delay), slow replica I/O, or network bandwidth limits.",
  ["Measure where the lag is: on the primary compare sent_lsn/write_lsn/flush_lsn/replay_lsn in `pg_stat_replication` (send lag = network; replay lag = replica apply).",
   "On the replica: `SELECT now() - pg_last_xact_replay_timestamp();` and look for long queries: `SELECT pid, now()-query_start, query FROM pg_stat_activity WHERE state <> 'idle' ORDER BY 2 DESC;`.",
   "Cancel blocking long queries if needed (`SELECT pg_cancel_backend(pid)`), and review `max_standby_streaming_delay` / `hot_standby_feedback`.",
   "Check replica disk I/O (`iostat -x 1`) and network throughput; schedule bulk writes off-peak.",
   "Route read traffic away from the replica while it catches up."],
  "Lag keeps growing for more than 30 minutes, or the primary is at risk of removing WAL the replica still needs.",
  "postgres replication lag streaming-replica pg_stat_replication database infrastructure",
  ["payments-db-replica-1", "orders-db-replica-2", "analytics-db-replica"],
  ["reports from {h} show yesterday's data, is replication broken?",
   "alert: {h} replication lag 900s. the app reads stale balances",
   "the replica {h} is super behind since the big import job started"],
  "Compare sent/write/flush/replay LSNs in `pg_stat_replication` on the primary to see whether the lag on {h} is network or replay, and check `now() - pg_last_xact_replay_timestamp()` and long-running queries on the replica. Cancel queries blocking replay, review max_standby_streaming_delay/hot_standby_feedback, check replica I/O, schedule bulk writes off-peak and route reads away until it catches up.",
  ("SEV3", "Replication lag on {h}", "Read-only API endpoints served data up to 20 minutes stale during a bulk import."),
  ("{h} lag is 2 hours and still growing, the primary's pg_wal is filling up and disk is at 88%",
   "Lag that keeps growing while the primary's WAL directory fills up endangers the primary itself. Escalate to the DBA on-call immediately to decide whether to pause the workload, rebuild the replica or drop its slot before the primary runs out of disk."))

A(I, "PostgreSQL replica broken: 'requested WAL segment has already been removed'",
  ["Replica log: FATAL: could not receive data from WAL stream: ERROR: requested WAL segment 0000000100000A2B000000F1 has already been removed",
   "Replica stuck; `pg_stat_replication` on the primary no longer lists it",
   "Happened after the replica was offline for maintenance or a network outage"],
  "The primary recycled WAL segments the replica still needed because no replication slot protects them and `wal_keep_size` was too small for the outage duration.",
  ["Check whether a WAL archive exists (restore_command to S3/pgBackRest); if so, configure it on the replica to catch up from the archive.",
   "Otherwise rebuild the replica: stop it, move the old data directory aside, and re-clone: `pg_basebackup -h payments-db-primary -U replicator -D /var/lib/postgresql/16/main -X stream -C -S replica1_slot -R -P`.",
   "Start the replica and verify it appears in `pg_stat_replication` with state streaming.",
   "Use a replication slot (created by -C -S above) and set `max_slot_wal_keep_size` on the primary so an offline replica cannot fill the primary's disk."],
  "The replica serves production reads and the rebuild will take longer than the allowed window, or the primary's disk is close to full.",
  "postgres replication wal pg_basebackup replica database infrastructure",
  ["payments-db-replica-1", "orders-db-replica-2", "crm-db-replica"],
  ["{h} has been failing since the weekend, log says requested WAL segment has already been removed",
   "replica {h} not replicating after the network outage. can we just restart it?"],
  "The primary recycled WAL that {h} still needed; a restart will not fix it. Catch up from the WAL archive if one exists, otherwise rebuild with `pg_basebackup -X stream -C -S <slot> -R`, verify it is streaming in `pg_stat_replication`, and protect it with a replication slot plus `max_slot_wal_keep_size`.",
  ("SEV3", "Replica {h} fell out of replication", "Read traffic ran only on the primary for a day, raising its CPU to 85%."))

A(I, "Inactive PostgreSQL replication slot fills primary disk",
  ["Primary disk usage climbing; `du -sh /var/lib/postgresql/16/main/pg_wal` is hundreds of GB",
   "`SELECT slot_name, active, restart_lsn, pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)) AS retained FROM pg_replication_slots;` shows an inactive slot retaining lots of WAL",
   "Logical replication/CDC consumer (e.g. Debezium) was stopped or decommissioned"],
  "A replication slot guarantees WAL is kept until its consumer confirms it; when the consumer (replica or CDC connector) is gone, the slot retains WAL indefinitely and fills the disk.",
  ["Find slots and retained WAL with the pg_replication_slots query above.",
   "Confirm with the owning team that the consumer is gone or can re-sync (Debezium can re-snapshot).",
   "Drop the stale slot: `SELECT pg_drop_replication_slot('debezium_orders');` — WAL is then recycled at the next checkpoint (`CHECKPOINT;`).",
   "Set `max_slot_wal_keep_size = '100GB'` to cap retention, and alert on retained WAL per slot.",
   "Never delete files in pg_wal manually."],
  "The slot belongs to an active replica/CDC pipeline whose owner cannot be reached, or the disk is above 95%.",
  "postgres replication-slot wal disk cdc debezium database infrastructure",
  ["payments-db-primary", "orders-db-primary", "crm-db-01"],
  ["disk on {h} grows 20GB/hour, pg_wal is huge. can I delete old wal files?",
   "{h} pg_wal directory is 400GB, alert says disk 90%"],
  "An inactive replication slot on {h} is retaining WAL; find it with the `pg_replication_slots` query (retained = pg_wal_lsn_diff). After confirming with the owner that the consumer is gone, `SELECT pg_drop_replication_slot('<slot>')` and run CHECKPOINT, then cap retention with `max_slot_wal_keep_size` — never delete pg_wal files by hand.",
  ("SEV2", "WAL retention filling {h}", "The primary reached 94% disk before a stale Debezium slot was dropped; write outage narrowly avoided."),
  ("{h} disk at 97%!! pg_wal full because of a slot called 'dwh_cdc', the data warehouse team is not answering",
   "With the disk at 97% and the slot owner unreachable, dropping the slot would break the DWH pipeline but waiting risks a primary outage; this decision belongs to the DBA on-call. Escalate to the DBA on-call immediately (and the DWH team lead) to drop the slot or add disk."))

A(I, "PostgreSQL: 'sorry, too many clients already'",
  ["FATAL: sorry, too many clients already",
   "FATAL: remaining connection slots are reserved for non-replication superuser connections",
   "`SELECT count(*), state FROM pg_stat_activity GROUP BY state;` shows many 'idle' or 'idle in transaction' sessions"],
  "All max_connections slots are used, typically because application pools are oversized across many pods, connections leak, or sessions sit 'idle in transaction'.",
  ["See who holds connections: `SELECT usename, application_name, client_addr, state, count(*) FROM pg_stat_activity GROUP BY 1,2,3,4 ORDER BY 5 DESC;`.",
   "Terminate leaked idle-in-transaction sessions carefully: `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE state = 'idle in transaction' AND now() - state_change > interval '10 minutes';`.",
   "Set `idle_in_transaction_session_timeout = '5min'` and reduce per-pod pool sizes (total = pods x pool size must stay below max_connections minus reserved slots).",
   "Put PgBouncer in transaction pooling mode in front of the database instead of raising max_connections (each connection costs memory).",
   "Fix the leak in the application (close connections/transactions)."],
  "Raising max_connections (requires restart and memory review) is being considered, or the primary is refusing all application traffic.",
  "postgres connections max_connections pgbouncer pooling database infrastructure",
  ["orders-db-primary", "crm-db-01", "payments-db-primary"],
  ["app logs: FATAL sorry, too many clients already connecting to {h}",
   "after scaling orders-api to 40 pods the database {h} refuses connections"],
  "{h} has used all max_connections slots; group `pg_stat_activity` by user/application/state to find the holders and terminate long idle-in-transaction sessions. Set idle_in_transaction_session_timeout, keep pods x pool size below max_connections, and put PgBouncer (transaction pooling) in front instead of simply raising max_connections.",
  ("SEV2", "Connection exhaustion on {h}", "New orders failed for 14 minutes after a scale-out multiplied connection pools."),
  ("{h} refusing ALL app connections, checkout down, we want to bump max_connections from 200 to 2000 and restart now",
   "The primary refusing all application traffic is a production outage, and raising max_connections tenfold requires a restart and a memory review. Escalate to the DBA on-call / incident commander; immediate mitigation is terminating idle-in-transaction sessions and reducing pool sizes."))

A(I, "MySQL replication stopped: Duplicate entry (error 1062)",
  ["`SHOW REPLICA STATUS\\G` shows Replica_SQL_Running: No, Last_SQL_Errno: 1062",
   "Last_SQL_Error: Could not execute Write_rows event on table shop.orders; Duplicate entry '88123' for key 'PRIMARY', Error_code: 1062; handler error HA_ERR_FOUND_DUPP_KEY",
   "Seconds_Behind_Source: NULL"],
  "The replica's data diverged from the source — usually because someone wrote directly to the replica (read_only not enforced), or a previous error was skipped — so applying a row event conflicts.",
  ["Inspect: `SHOW REPLICA STATUS\\G` (MySQL 8.0.22+; older: SHOW SLAVE STATUS) and compare the row on source and replica.",
   "Make replicas read-only: `SET GLOBAL super_read_only = ON;` and find who wrote to it (general log / audit).",
   "Do NOT blindly skip with sql_replica_skip_counter; if the conflicting row is verified identical, skipping that single transaction is acceptable (GTID: inject an empty transaction for the failed GTID).",
   "Check consistency with `pt-table-checksum` and repair with `pt-table-sync`, or rebuild the replica from a fresh backup (`xtrabackup` / clone plugin).",
   "`START REPLICA;` and watch Seconds_Behind_Source."],
  "Data divergence spans many rows/tables or the replica is used for failover of a production source.",
  "mysql replication duplicate-entry 1062 replica database infrastructure",
  ["shop-db-replica-1", "mysql-replica-02", "wp-db-replica"],
  ["replication on {h} stopped, error 1062 duplicate entry. can I just skip it?",
   "Seconds_Behind_Source is NULL on {h}, SQL thread not running"],
  "{h} has diverged from the source (often a direct write to the replica), so replication stopped on error 1062. Enforce `super_read_only`, verify the conflicting row, and skip only that single verified transaction (GTID empty transaction) — not blindly; check consistency with pt-table-checksum or rebuild the replica, then `START REPLICA` and watch lag.",
  ("SEV3", "MySQL replica {h} stopped on duplicate key", "Read replicas were stale for 3 hours; reporting dashboards showed old order counts."))

A(I, "MySQL replica lag (Seconds_Behind_Source growing)",
  ["Seconds_Behind_Source steadily increasing during business hours",
   "Relay log keeps growing; `SHOW PROCESSLIST` shows the SQL thread on a large UPDATE/DELETE",
   "Replica CPU low but single applier thread busy"],
  "Replication apply is effectively single-threaded or blocked by large transactions (bulk DELETE without batching, ALTER TABLE), so the replica applies changes more slowly than the source commits them.",
  ["Check: `SHOW REPLICA STATUS\\G` (Seconds_Behind_Source, Relay_Log_Space) and `SHOW PROCESSLIST` for the applier.",
   "Enable parallel apply: `SET GLOBAL replica_parallel_workers = 8; SET GLOBAL replica_preserve_commit_order = ON;` (replica_parallel_type=LOGICAL_CLOCK; default in 8.0.27+), then restart replication threads.",
   "Break large writes into batches on the source (e.g. DELETE ... LIMIT 5000 loops) and run schema changes with gh-ost/pt-online-schema-change.",
   "Check replica I/O: `innodb_flush_log_at_trx_commit` and `sync_binlog` settings appropriate for a replica, disk latency with `iostat -x 1`."],
  "Lag exceeds 30 minutes on a replica used for failover or customer-facing reads.",
  "mysql replication lag parallel-replication database infrastructure",
  ["shop-db-replica-1", "mysql-replica-02", "bi-mysql-replica"],
  ["{h} is 40 minutes behind, the purge job is running on the primary",
   "why is Seconds_Behind_Source on {h} always going up in the afternoon"],
  "{h} applies changes more slowly than the source commits them, usually single-threaded apply or large transactions; check `SHOW REPLICA STATUS` and the applier in `SHOW PROCESSLIST`. Enable parallel apply (replica_parallel_workers with commit order preserved), batch large DELETE/UPDATEs and use gh-ost/pt-osc for schema changes, and check replica I/O settings.",
  ("SEV4", "Lag on MySQL replica {h}", "BI dashboards were up to 45 minutes stale each afternoon during purge jobs."))

A(I, "PostgreSQL transaction ID wraparound warning",
  ["WARNING: database \"app\" must be vacuumed within 10985967 transactions",
   "HINT: To avoid a database shutdown, execute a database-wide VACUUM in that database.",
   "`SELECT datname, age(datfrozenxid) FROM pg_database ORDER BY 2 DESC;` shows age above 1.5 billion"],
  "Autovacuum could not freeze old tuples fast enough — blocked by long-running transactions, abandoned prepared transactions or replication slots holding back the xmin horizon, or throttled on very large tables — so transaction IDs approach the 2^31 wraparound limit, at which PostgreSQL stops accepting writes.",
  ["Find the oldest tables: `SELECT relname, age(relfrozenxid) FROM pg_class WHERE relkind='r' ORDER BY 2 DESC LIMIT 10;`.",
   "Find what holds back the horizon: long transactions (`pg_stat_activity` backend_xmin), `pg_prepared_xacts`, and `pg_replication_slots` xmin/catalog_xmin.",
   "Remove the blocker, then run `VACUUM (FREEZE, VERBOSE) <table>;` on the oldest tables (consider raising maintenance_work_mem and removing autovacuum cost limits for the session).",
   "Monitor `age(datfrozenxid)` and alert at 500M."],
  "Always escalate to the DBA on-call: wraparound risk can force a database shutdown.",
  "postgres vacuum wraparound autovacuum xid database infrastructure",
  ["orders-db-primary", "events-db-01", "crm-db-01"],
  ["postgres log on {h} says must be vacuumed within 10985967 transactions. is this serious?",
   "got a weird warning about transaction wraparound on {h}"],
  "{h} is approaching transaction ID wraparound, after which PostgreSQL stops accepting writes. Identify the oldest tables and whatever is holding back the xmin horizon (long transactions, prepared transactions, replication slots), remove it and run `VACUUM (FREEZE)` on those tables, and escalate to the DBA on-call.",
  ("SEV1", "XID wraparound risk on {h}", "The database was 11M transactions from forced read-only mode; emergency vacuum took 6 hours."),
  ("{h} now logs must be vacuumed within 2000000 transactions and autovacuum can't finish on the events table",
   "With only 2 million transactions left, the database will soon stop accepting writes, which is an imminent SEV1. Escalate immediately to the DBA on-call to run an emergency freeze vacuum and remove the xmin blocker."))

A(I, "Kubernetes pod in CrashLoopBackOff",
  ["`kubectl get pods` shows STATUS CrashLoopBackOff with increasing RESTARTS",
   "Event: 'Back-off restarting failed container app in pod orders-api-7d9f8c-x2k4j'",
   "`kubectl describe pod` shows Last State: Terminated, Reason: Error, Exit Code: 1"],
  "The container process exits repeatedly soon after start — bad configuration or missing secret/env var, failed dependency connection at startup, wrong command/entrypoint, or a failing liveness probe killing it.",
  ["Get the crash output from the previous run: `kubectl logs orders-api-7d9f8c-x2k4j -n orders --previous`.",
   "Check exit code and probe events: `kubectl describe pod orders-api-7d9f8c-x2k4j -n orders` (exit 1 = app error, 137 = killed/OOM, 139 = segfault; 'Liveness probe failed' = probe).",
   "Compare with the last working revision: `kubectl rollout history deploy/orders-api -n orders` and config/secret changes.",
   "Fix the config or roll back: `kubectl rollout undo deploy/orders-api -n orders`.",
   "If the liveness probe kills a slow-starting app, add a startupProbe or increase initialDelaySeconds."],
  "The crash is caused by a dependency outage (database, message broker) or persists after rollback.",
  "kubernetes crashloopbackoff pod logs rollout infrastructure",
  ["orders-api", "payment-worker", "notification-svc"],
  ["{h} pods are CrashLoopBackOff after the deploy, please help!!",
   "my pod keeps restarting, kubectl says CrashLoopBackOff. is the cluster broken?",
   "{h} restarts every minute, back-off restarting failed container"],
  "Read the previous container's output with `kubectl logs <pod> --previous` and the exit code/probe events in `kubectl describe pod` for {h}. Fix the bad config or missing secret, or roll back with `kubectl rollout undo deploy/{h}`; if a liveness probe kills a slow starter, add a startupProbe.",
  ("SEV2", "{h} in CrashLoopBackOff after deploy", "The service ran on 1 of 6 replicas for 20 minutes until the release was rolled back."),
  ("{h} in CrashLoopBackOff, logs say 'could not connect to postgres: connection refused' and the orders DB primary seems down too",
   "The crash loop is a symptom of the database primary being down, so restarting or rolling back the pods will not help. Escalate to the DBA on-call / incident commander for the database outage."))

A(I, "Container OOMKilled (exit code 137)",
  ["`kubectl describe pod` shows Last State: Terminated, Reason: OOMKilled, Exit Code: 137",
   "Node dmesg: 'Memory cgroup out of memory: Killed process 31337 (java) total-vm:... anon-rss:...'",
   "Pod restarts under load; memory graph hits the limit right before each restart"],
  "The container exceeded its memory limit and the kernel OOM killer terminated it — the limit is too low for the workload, the runtime is not container-aware (JVM heap sized larger than the limit), or there is a memory leak.",
  ["Confirm: `kubectl describe pod <pod> | grep -A5 'Last State'` and `kubectl top pod <pod> --containers`.",
   "Compare usage against requests/limits over time (Prometheus `container_memory_working_set_bytes`).",
   "For JVMs set heap relative to the limit: `-XX:MaxRAMPercentage=75` (and avoid fixed -Xmx above the limit); for Node `--max-old-space-size`.",
   "Raise the memory limit (and request) to observed peak plus headroom in the deployment manifest, and roll out.",
   "If usage grows without bound, capture a heap dump/profile and fix the leak."],
  "The node itself is under memory pressure (system OOM affecting many pods) or the leak is in a third-party component.",
  "kubernetes oomkilled memory limits jvm exit-137 infrastructure",
  ["search-api", "report-generator", "image-resizer"],
  ["{h} restarts with exit code 137, is it being hacked?",
   "pod {h} OOMKilled every time the big report runs"],
  "{h} exceeds its memory limit and is OOM-killed (exit 137). Compare usage with the limit (`kubectl top pod`, working-set metrics), size runtimes to the limit (JVM `-XX:MaxRAMPercentage=75`, Node `--max-old-space-size`), raise the limit and request to peak plus headroom, and profile if usage grows without bound.",
  ("SEV3", "{h} repeatedly OOMKilled", "Report generation failed for all customers for an afternoon after a dependency upgrade increased memory use."))

A(I, "ImagePullBackOff / ErrImagePull",
  ["`kubectl get pods` shows ImagePullBackOff or ErrImagePull",
   "Event: Failed to pull image \"registry.corp.example.com/shop/cart:1.42.0\": rpc error: code = NotFound desc = failed to pull and unpack image ...: not found",
   "Event: ... pull access denied, repository does not exist or may require authorization / 401 Unauthorized / no basic auth credentials"],
  "The node cannot pull the image: wrong tag/name (not found), missing or expired registry credentials (imagePullSecrets, ECR token), or network access to the registry is blocked.",
  ["Read the exact event: `kubectl describe pod <pod> | sed -n '/Events/,$p'`.",
   "Not found: verify the tag exists (`crane ls registry.corp.example.com/shop/cart` or `aws ecr describe-images --repository-name shop/cart --image-ids imageTag=1.42.0`) — CI may have failed to push.",
   "Unauthorized: check the pull secret exists in the namespace and is referenced: `kubectl get secret regcred -n shop` and `imagePullSecrets` in the pod spec / service account; recreate with `kubectl create secret docker-registry regcred --docker-server=... --docker-username=... --docker-password=...`.",
   "Network: from a node, `crictl pull <image>` to see timeouts (proxy/VPC endpoints).",
   "Delete the pod or wait for back-off to retry after fixing."],
  "The registry itself is down or rate-limited (e.g. Docker Hub 'toomanyrequests').",
  "kubernetes imagepullbackoff registry imagepullsecrets ecr infrastructure",
  ["cart", "catalog-api", "web-frontend"],
  ["new version of {h} won't start, ImagePullBackOff. registry down?",
   "pods for {h} stuck ErrImagePull: pull access denied, repository does not exist or may require authorization"],
  "`kubectl describe pod` for {h} gives the exact pull error: 'not found' means the tag was never pushed (check the registry/ECR), 'unauthorized/pull access denied' means the imagePullSecret is missing, expired or not referenced, and timeouts mean network/proxy. Fix it (push the image, recreate/reference the secret) and let the pod retry.",
  ("SEV3", "{h} rollout blocked by ImagePullBackOff", "A release was stuck for 40 minutes because CI failed to push the tag."),
  ("every pod pulling from docker hub fails: toomanyrequests: You have reached your pull rate limit. whole cluster affected",
   "Docker Hub rate limiting is a registry-side limit affecting the whole cluster, not a per-deployment fix. Escalate to the SRE/Platform team to authenticate pulls or switch to the internal pull-through cache/mirror."))

A(I, "Pod Pending: PersistentVolumeClaim not bound",
  ["Event: 0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
   "`kubectl get pvc` shows STATUS Pending; event 'storageclass.storage.k8s.io \"fast-ssd\" not found' or 'waiting for a volume to be created, either by external provisioner \"ebs.csi.aws.com\" or manually created by system administrator'",
   "'waiting for first consumer to be created before binding' (WaitForFirstConsumer)"],
  "No PersistentVolume can be provisioned or matched: the StorageClass does not exist, the CSI driver is missing/failing (IAM permissions, driver not installed), or topology (AZ) constraints cannot be satisfied.",
  ["Describe the PVC: `kubectl describe pvc data-postgres-0 -n db` for provisioning events.",
   "Check StorageClasses: `kubectl get storageclass` — name exists, default marked, provisioner correct.",
   "Check the CSI driver: `kubectl -n kube-system get pods | grep csi` and its logs (e.g. `kubectl logs -n kube-system deploy/ebs-csi-controller -c csi-provisioner`) for AccessDenied/UnauthorizedOperation.",
   "'waiting for first consumer' is normal until a pod uses the claim; if the pod is also Pending, check node affinity vs the volume's zone.",
   "Fix and let the provisioner retry; verify `kubectl get pvc` shows Bound."],
  "The CSI driver or storage backend is down cluster-wide.",
  "kubernetes pvc pending storageclass csi persistent-volume infrastructure",
  ["data-postgres-0", "elasticsearch-data-es-0", "minio-data-2"],
  ["statefulset pod with claim {h} is Pending: pod has unbound immediate PersistentVolumeClaims",
   "PVC {h} stuck Pending forever in the new cluster"],
  "`kubectl describe pvc {h}` shows why provisioning fails: a missing StorageClass, a CSI driver without permissions (check the csi-provisioner logs) or AZ topology constraints. Fix the StorageClass/driver/affinity and confirm the claim becomes Bound; 'waiting for first consumer' alone is normal.",
  ("SEV3", "PVC {h} unbound in new cluster", "A stateful service launch slipped a day because the EBS CSI driver lacked IAM permissions."))

A(I, "Multi-Attach error for ReadWriteOnce volume",
  ["Warning FailedAttachVolume: Multi-Attach error for volume \"pvc-3f2a...\" Volume is already exclusively attached to one node and can't be attached to another",
   "New pod stuck ContainerCreating during a rolling update or after a node failure",
   "Event: 'Unable to attach or mount volumes: ... timed out waiting for the condition'"],
  "A ReadWriteOnce block volume (EBS, Azure Disk, PD) can attach to only one node; a RollingUpdate starts the new pod on another node while the old pod still holds it, or a failed node never released the attachment.",
  ["Find the holder: `kubectl get volumeattachment | grep pvc-3f2a` and which node/pod uses the PVC (`kubectl describe pvc`).",
   "For Deployments with RWO volumes use `strategy: type: Recreate` (or a StatefulSet).",
   "If the old node is dead, cordon/delete the node object or force-delete the stuck pod (`kubectl delete pod <old> --grace-period=0 --force`) so the attach/detach controller releases the volume (about 6 minutes timeout).",
   "If still attached in the cloud, detach carefully: `aws ec2 detach-volume --volume-id vol-...` (only if the old node is really gone)."],
  "The volume holds database data and a force detach risks corruption.",
  "kubernetes pvc multi-attach rwo volume ebs infrastructure",
  ["grafana", "sonarqube", "jenkins"],
  ["{h} pod stuck ContainerCreating after deploy: Multi-Attach error for volume",
   "node died and {h} can't start on another node, volume already exclusively attached"],
  "{h}'s ReadWriteOnce volume is still attached to another node (old pod during a rolling update, or a dead node). Switch the Deployment to `strategy: Recreate` (or a StatefulSet); for a dead node force-delete the stuck pod/node object so the volume is released, and detach in the cloud only if the old node is really gone.",
  ("SEV4", "{h} stuck on Multi-Attach after rollout", "The service was unavailable 25 minutes during a routine deploy."))

A(I, "PersistentVolumeClaim full: expand the volume",
  ["Application log: 'No space left on device' inside the pod",
   "`kubectl exec <pod> -- df -h /data` shows 100%",
   "kubelet_volume_stats_available_bytes alert for the PVC"],
  "The persistent volume reached its provisioned size; it can be expanded online only if the StorageClass has `allowVolumeExpansion: true` and the CSI driver supports expansion.",
  ["Check the StorageClass: `kubectl get sc gp3 -o jsonpath='{.allowVolumeExpansion}'`.",
   "Patch the claim: `kubectl patch pvc data-kafka-0 -n kafka -p '{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"500Gi\"}}}}'` (sizes can only increase).",
   "Watch conditions: `kubectl describe pvc data-kafka-0` (Resizing → FileSystemResizePending → done); filesystem resize happens online with modern CSI drivers.",
   "For StatefulSets also update volumeClaimTemplates in Git (requires recreating the StatefulSet object with `--cascade=orphan`).",
   "Address retention (log/topic retention) so growth is bounded."],
  "The StorageClass does not allow expansion (requires data migration) or the PVC belongs to a database.",
  "kubernetes pvc resize volume-expansion storage disk infrastructure",
  ["data-kafka-0", "prometheus-db", "gitlab-data"],
  ["{h} volume is full, kafka broker crashed",
   "how do I make the PVC {h} bigger? it's at 100%"],
  "Check that the StorageClass has allowVolumeExpansion=true, then increase the request on {h} with `kubectl patch pvc` and watch the Resizing/FileSystemResizePending conditions. Update StatefulSet volumeClaimTemplates in Git as well, and bound growth with retention settings.",
  ("SEV3", "PVC {h} full", "A Kafka broker went offline for 30 minutes until its volume was expanded."))

A(I, "Kubernetes node NotReady",
  ["`kubectl get nodes` shows a node NotReady",
   "Node condition: 'Kubelet stopped posting node status' / reason NodeStatusUnknown",
   "kubelet journal: 'PLEG is not healthy: pleg was last seen active 3m0s ago' or 'container runtime is down'"],
  "The kubelet on the node stopped reporting — kubelet or containerd crashed, the node is out of memory/disk/PIDs, certificate issues, or the node lost network connectivity to the API server.",
  ["Check conditions: `kubectl describe node ip-10-1-2-3` (MemoryPressure, DiskPressure, PIDPressure, Ready reason).",
   "On the node (SSM/SSH): `systemctl status kubelet containerd` and `journalctl -u kubelet --since '-30 min' | tail -100`.",
   "Check resources: `df -h /var/lib/containerd /var/lib/kubelet`, `free -m`, `dmesg -T | tail`.",
   "Restart services if hung: `systemctl restart containerd kubelet`.",
   "If the node does not recover, cordon and drain (`kubectl drain ip-10-1-2-3 --ignore-daemonsets --delete-emptydir-data`) and replace it (terminate the instance; the node group recreates it)."],
  "Several nodes go NotReady at the same time (control-plane, network or CNI issue).",
  "kubernetes node notready kubelet containerd pleg infrastructure",
  ["ip-10-1-2-3.eu-west-1.compute.internal", "aks-nodepool1-3120-vmss000004", "gke-prod-pool-2-7f1c"],
  ["node {h} NotReady, pods on it are Terminating forever",
   "kubectl get nodes shows one node NotReady since an hour"],
  "`kubectl describe node {h}` shows the pressure condition or reason; on the node check kubelet/containerd status and logs, disk and memory. Restart containerd and kubelet if they are hung, otherwise cordon, drain and replace the node.",
  ("SEV3", "Node {h} NotReady", "Pods on the node were rescheduled after 5 minutes; one stateful pod stayed down until the node was drained."),
  ("4 of our 9 nodes went NotReady within 2 minutes, kubelet logs on all say 'connection refused' to the API server endpoint",
   "Several nodes losing the API server at once points at a control-plane or network problem rather than individual nodes, so restarting kubelets will not help. Escalate to the SRE/Platform on-call as a cluster-wide incident."))

A(I, "Pods evicted: node DiskPressure / ephemeral-storage",
  ["Pod status Evicted: 'The node was low on resource: ephemeral-storage. Threshold quantity: 10%, available: 8%.'",
   "Node condition DiskPressure=True; event 'Attempting to reclaim ephemeral-storage'",
   "Many pods in Evicted/Error state on one node"],
  "The node's root or image filesystem dropped below the kubelet eviction threshold because of unused container images, large container logs, or pods writing heavily to emptyDir/container filesystem without ephemeral-storage limits.",
  ["Confirm: `kubectl describe node <node> | grep -A5 Conditions` and `kubectl get pods -A --field-selector status.phase=Failed`.",
   "On the node: `df -h /var/lib/containerd /var/lib/kubelet` and `du -sh /var/log/pods/* | sort -h | tail`.",
   "Free image space: `crictl rmi --prune`; identify pods writing large emptyDir data.",
   "Set `resources.limits.ephemeral-storage` on heavy writers and make apps log to stdout with log rotation (kubelet `containerLogMaxSize`).",
   "Clean up evicted pods: `kubectl delete pods -A --field-selector status.phase=Failed`."],
  "The node root volume is too small for the workload mix (node group change needed).",
  "kubernetes eviction diskpressure ephemeral-storage node disk infrastructure",
  ["ip-10-1-4-17.eu-west-1.compute.internal", "gke-prod-pool-1-a93d", "aks-nodepool2-4410-vmss000001"],
  ["lots of pods Evicted on {h}: low on resource ephemeral-storage",
   "why are my pods evicted? node says DiskPressure"],
  "{h}'s filesystem dropped below the kubelet eviction threshold; check `df -h` and pod log/emptyDir usage on the node. Prune unused images (`crictl rmi --prune`), set ephemeral-storage limits on heavy writers and log rotation, and clean up Evicted pods.",
  ("SEV4", "Evictions on {h} from DiskPressure", "Batch pods were evicted repeatedly for 2 hours because one job wrote 80 GB to emptyDir."))

A(I, "etcd 'mvcc: database space exceeded'",
  ["kube-apiserver / etcdctl: 'etcdserver: mvcc: database space exceeded'",
   "`etcdctl endpoint status --write-out=table` shows DB SIZE near the quota (default 2 GB) and `etcdctl alarm list` shows 'alarm:NOSPACE'",
   "Cluster becomes read-only: kubectl apply fails, no new pods can be created"],
  "etcd reached its backend quota because history was not compacted/defragmented or an operator/CRD writes huge numbers of objects/events, and it raised a NOSPACE alarm that blocks writes.",
  ["Check status: `ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/server.crt --key=/etc/kubernetes/pki/etcd/server.key endpoint status -w table`.",
   "Take a snapshot first: `etcdctl snapshot save /var/backups/etcd-$(date +%F).db`.",
   "Compact to the current revision: `rev=$(etcdctl endpoint status -w json | jq '.[0].Status.header.revision'); etcdctl compact $rev`.",
   "Defragment each member one at a time: `etcdctl defrag --endpoints=<member>`, then `etcdctl alarm disarm`.",
   "Find the object type causing growth (`etcdctl get / --prefix --keys-only | cut -d/ -f3 | sort | uniq -c | sort -n`) and fix it."],
  "Always involve the Platform on-call for production control planes; escalate immediately if the snapshot fails or members disagree.",
  "etcd kubernetes quota defrag compaction control-plane infrastructure",
  ["etcd-01", "k8s-master-02", "etcd-prod-3"],
  ["kubectl apply fails with etcdserver: mvcc: database space exceeded",
   "{h} alarm NOSPACE, cluster won't accept changes"],
  "etcd on {h} has hit its space quota and raised NOSPACE, which blocks writes. Take a snapshot, compact to the current revision, defragment members one at a time, `etcdctl alarm disarm`, and find the object type causing the growth — involving the Platform on-call for production clusters.",
  ("SEV1", "etcd NOSPACE on {h}", "The production cluster rejected all writes (no deploys, no scaling) for 35 minutes."),
  ("{h} hit database space exceeded on the PROD cluster and the snapshot save fails with 'context deadline exceeded'",
   "Defragmenting production etcd without a working snapshot risks unrecoverable control-plane loss. Escalate immediately to the SRE/Platform on-call; do not compact or defrag until a good snapshot exists."))

A(I, "etcd slow: 'apply request took too long' / heartbeat failures",
  ["etcd log: 'apply request took too long' took=1.2s expected-duration=100ms",
   "etcd log: 'failed to send out heartbeat on time (exceeded the 100ms timeout for 412ms)' / 'server is likely overloaded'",
   "Leader elections in etcd_server_leader_changes_seen_total; kube-apiserver latency spikes"],
  "etcd is latency-sensitive to disk fsync; slow or shared disks (burst credits exhausted, noisy neighbours) or CPU starvation make WAL fsync exceed tens of milliseconds, causing slow applies and missed heartbeats.",
  ["Check disk latency metrics: `etcd_disk_wal_fsync_duration_seconds` p99 should be < 10 ms and `etcd_disk_backend_commit_duration_seconds` p99 < 25 ms.",
   "On the host: `iostat -x 1` for await/%util on the etcd disk; check cloud volume burst balance/IOPS.",
   "Move etcd data to dedicated low-latency storage (e.g. io2/gp3 with provisioned IOPS, local NVMe), and give etcd CPU priority.",
   "Keep the DB small (compaction/defrag) and verify network RTT between members is low.",
   "Watch leader changes stabilise."],
  "Leader elections continue after storage changes or the control plane is managed by a provider.",
  "etcd latency disk fsync heartbeat control-plane kubernetes infrastructure",
  ["etcd-01", "etcd-prod-3", "k8s-master-01"],
  ["kubectl is super slow and {h} logs are full of 'apply request took too long'",
   "etcd leader keeps changing on {h}, failed to send out heartbeat on time"],
  "etcd on {h} is suffering from slow disk fsync or CPU starvation; check `etcd_disk_wal_fsync_duration_seconds` (p99 should be under 10 ms) and `iostat -x` on the etcd disk. Move etcd to dedicated low-latency storage with provisioned IOPS, give it CPU priority, keep the DB compacted and confirm leader changes stop.",
  ("SEV2", "etcd latency on {h}", "API server requests timed out intermittently for an hour; deploys failed."))

A(I, "kubeadm cluster certificates expired",
  ["kubectl: 'Unable to connect to the server: x509: certificate has expired or is not yet valid: current time 2025-07-02T08:00:00Z is after 2025-07-01T10:12:44Z'",
   "kube-apiserver or kubelet logs: 'x509: certificate has expired'",
   "`kubeadm certs check-expiration` shows RESIDUAL TIME 'invalid' or 0d"],
  "kubeadm issues control-plane certificates valid for one year and renews them only during `kubeadm upgrade`; clusters not upgraded within a year hit expiry.",
  ["Check: `kubeadm certs check-expiration` on a control-plane node.",
   "Back up /etc/kubernetes/pki and /etc/kubernetes/*.conf, then renew: `kubeadm certs renew all`.",
   "Restart control-plane static pods (move manifests out of /etc/kubernetes/manifests and back, or restart kubelet) and copy the new admin.conf to `~/.kube/config`.",
   "Repeat on each control-plane node; check kubelet client cert rotation (`rotateCertificates: true`).",
   "Add monitoring on certificate expiry and upgrade at least yearly."],
  "The cluster CA itself (ca.crt, 10-year default) is expired or the cluster is managed (EKS/AKS/GKE).",
  "kubernetes kubeadm certificates x509 expired control-plane infrastructure",
  ["k8s-master-01", "k8s-lab-cp", "onprem-cp-02"],
  ["kubectl says x509: certificate has expired or is not yet valid for our onprem cluster on {h}",
   "the lab cluster died this morning, apiserver log says certificate expired"],
  "The kubeadm control-plane certificates on {h} have reached their one-year expiry; confirm with `kubeadm certs check-expiration`. Back up /etc/kubernetes, run `kubeadm certs renew all`, restart the control-plane static pods, update your kubeconfig from admin.conf, repeat on each control-plane node and add expiry monitoring.",
  ("SEV2", "Expired control-plane certificates on {h}", "The on-prem cluster API was unavailable for 90 minutes; workloads kept running."))

A(I, "Deployment rollout stuck (readiness probe failing)",
  ["`kubectl rollout status deploy/catalog-api` hangs: 'Waiting for deployment \"catalog-api\" rollout to finish: 1 out of 4 new replicas have been updated...'",
   "New pods Running but 0/1 READY; event 'Readiness probe failed: HTTP probe failed with statuscode: 503'",
   "Deployment condition: ProgressDeadlineExceeded"],
  "New pods never become Ready (readiness probe path/port wrong, app waiting on a dependency, or a config error), so the rolling update cannot proceed past maxUnavailable/maxSurge.",
  ["Inspect: `kubectl describe deploy catalog-api` (conditions) and `kubectl describe pod <new-pod>` (probe failures).",
   "Check the app logs of a new pod: `kubectl logs <new-pod>` and test the probe endpoint: `kubectl exec <new-pod> -- wget -qO- localhost:8080/ready`.",
   "Roll back if needed: `kubectl rollout undo deploy/catalog-api`.",
   "Fix the probe or config and redeploy; set `progressDeadlineSeconds` so stalls are detected."],
  "The rollout is blocked by a dependency outage, or rollback also fails.",
  "kubernetes rollout readiness-probe deployment infrastructure",
  ["catalog-api", "checkout", "user-profile"],
  ["deploy of {h} stuck for 30 mins, new pods running but not ready",
   "{h} rollout hangs, readiness probe failed 503"],
  "New {h} pods never become Ready, so the rollout cannot progress; read the probe failures in `kubectl describe pod` and the new pod's logs, and test the probe endpoint with `kubectl exec`. Roll back with `kubectl rollout undo` if needed, then fix the probe/config and set progressDeadlineSeconds.",
  ("SEV4", "Stalled rollout of {h}", "A release was stuck for 40 minutes; old replicas kept serving traffic."))

A(I, "NFS 'Stale file handle'",
  ["ls: cannot access '/mnt/shared/reports': Stale file handle",
   "Application errors with ESTALE after the NFS server was restarted/failed over or the export was recreated",
   "`mount | grep nfs` shows the mount but every access fails"],
  "The client holds file handles that no longer exist on the server — the exported filesystem was recreated, moved, restored from snapshot, or the export's fsid changed during failover.",
  ["Confirm from the client: `stat /mnt/shared` and `dmesg -T | grep -i nfs`.",
   "Stop processes using the mount (`fuser -vm /mnt/shared`), then remount: `umount -f /mnt/shared` (or `umount -l` if busy) and `mount /mnt/shared`.",
   "On clustered NFS servers, set a fixed `fsid=` per export in /etc/exports so handles survive failover (`exportfs -ra`).",
   "Restart the application after remount."],
  "Many clients are affected after a storage failover, or the NFS server itself reports errors.",
  "nfs stale-file-handle mount storage linux infrastructure",
  ["app-server-03", "render-node-11", "reporting-01"],
  ["/mnt/shared on {h} says Stale file handle since the storage maintenance",
   "reports job failing: Stale file handle on the NFS share"],
  "The NFS client on {h} holds handles that no longer exist on the server (export recreated or failed over). Stop the processes using the mount (`fuser -vm`), `umount -f` (or `-l`) and remount, restart the application, and set a fixed fsid per export on clustered NFS servers.",
  ("SEV3", "Stale NFS handles on {h}", "Report generation failed for 2 hours after a storage failover."))

A(I, "NFS mount hangs: 'server not responding, still trying'",
  ["dmesg: nfs: server nas-01 not responding, still trying",
   "`df -h` and `ls /mnt/data` hang; processes stuck in D state (`ps -eo pid,stat,cmd | grep ' D '`)",
   "Later: 'nfs: server nas-01 OK'"],
  "With default `hard` mounts the client retries forever while the NFS server is unreachable or overloaded (network issue, firewall on 2049/tcp, server crash), blocking every process touching the mount.",
  ["Check server reachability: `ping nas-01`, `nc -vz nas-01 2049`, `rpcinfo -p nas-01` and `showmount -e nas-01`.",
   "Check server health with the storage team (nfsd threads, load, disk latency).",
   "Once the server is back the hung processes resume; if the server is gone, `umount -f -l /mnt/data` to release clients.",
   "Review mount options: keep `hard` for data integrity but add `timeo=600,retrans=2` and use `_netdev` in /etc/fstab; mount non-critical data with `soft` only if apps tolerate I/O errors."],
  "The NFS server/NAS is down or overloaded (storage team), or the network path is broken.",
  "nfs mount hang not-responding storage linux infrastructure",
  ["nas-01", "nas-02", "filer-eu-01"],
  ["everything on /mnt/data hangs, even ls. dmesg says nfs: server {h} not responding",
   "our servers freeze when accessing the shared drive on {h}"],
  "Clients are blocked on a hard NFS mount because {h} is unreachable or overloaded; check `nc -vz {h} 2049`, `rpcinfo -p {h}` and `showmount -e`, and the server's health. Processes resume once the server responds; if it is gone use `umount -f -l` to release clients, and review mount options (hard with timeo/retrans, _netdev).",
  ("SEV2", "NFS server {h} not responding", "20 application servers hung for 25 minutes while the NAS was overloaded."),
  ("{h} not responding for all 40 clients and the NAS web UI shows a failed controller",
   "A failed NAS controller is a storage hardware failure affecting every client, and nothing on the clients will fix it. Escalate to the SRE/Infrastructure on-call and the storage vendor support for the controller failover/replacement."))

A(I, "Clock drift / NTP not synchronised",
  ["`timedatectl` shows 'System clock synchronized: no'",
   "`chronyc tracking` reports 'System time : 42.1 seconds fast of NTP time' or 'Leap status : Not synchronised'",
   "Kerberos: 'KRB_AP_ERR_SKEW Clock skew too great'; TLS 'certificate is not yet valid'; TOTP codes rejected"],
  "chronyd/ntpd is not running or cannot reach its time sources (UDP/123 blocked, wrong server names), so the clock drifts; on VMs, host time sync conflicts can also cause jumps.",
  ["Check: `timedatectl`, `chronyc tracking`, `chronyc sources -v` (a '^*' marks the selected source; '?' = unreachable).",
   "Fix sources in /etc/chrony/chrony.conf (e.g. `server ntp1.corp.example.com iburst`; AWS: `server 169.254.169.123 prefer iburst`) and ensure UDP/123 is allowed.",
   "`systemctl enable --now chronyd` and step the clock immediately: `chronyc makestep`.",
   "Disable conflicting sync (e.g. only one of chronyd, ntpd or systemd-timesyncd).",
   "Verify `chronyc tracking` offset is in milliseconds."],
  "The corporate NTP servers themselves are wrong or unreachable for many hosts.",
  "ntp chrony time clock-skew kerberos linux infrastructure",
  ["dc-app-04", "kafka-broker-03", "build-01"],
  ["can't log in to {h} with my domain account, error Clock skew too great",
   "{h} time is 3 minutes off, logs are confusing everyone"],
  "The clock on {h} is not synchronised: check `timedatectl`, `chronyc tracking` and `chronyc sources -v`. Fix the NTP sources in chrony.conf and allow UDP/123, enable chronyd, step the clock with `chronyc makestep`, make sure only one time daemon runs, and verify the offset is back in milliseconds.",
  ("SEV3", "Clock drift on {h}", "Kerberos authentication to the host failed for a morning after chronyd was disabled by an image change."))

A(I, "systemd service fails: 'Start request repeated too quickly'",
  ["`systemctl status app` shows 'Failed with result 'exit-code'' and 'Start request repeated too quickly.'",
   "The unit is in failed state and does not restart anymore",
   "`journalctl -u app` shows the same error on every start attempt"],
  "The service crashed on start several times within StartLimitIntervalSec (default 5 starts in 10 s), so systemd stopped retrying; the real cause is the underlying start failure.",
  ["Read the actual error: `journalctl -u app -b --no-pager | tail -50`.",
   "Fix the root cause (config syntax, missing file/permission, port already in use: `ss -ltnp | grep 8080`).",
   "Reset the counter and start: `systemctl reset-failed app && systemctl start app`.",
   "If it is a transient dependency issue, add `Restart=on-failure`, `RestartSec=5` and proper `After=`/`Wants=` dependencies (e.g. network-online.target) via `systemctl edit app`."],
  "The service is a vendor-supported component whose start failure points at corrupted installation or licence.",
  "systemd service start-limit journalctl linux infrastructure",
  ["web-07", "etl-worker-02", "grafana-01"],
  ["service on {h} won't start, says Start request repeated too quickly",
   "after reboot {h}'s app service is failed and restart doesn't work"],
  "systemd stopped retrying after repeated start failures; read the real error with `journalctl -u <unit> -b` on {h} and fix it (config, permissions, port in use). Then `systemctl reset-failed <unit> && systemctl start <unit>`, and add Restart=on-failure/RestartSec and proper After=/Wants= dependencies for transient issues.",
  ("SEV4", "Service on {h} failed to start after reboot", "A monitoring service was down for 3 hours after patching because it started before the network was online."))

A(I, "Linux OOM killer terminated a process",
  ["dmesg: 'Out of memory: Killed process 2145 (java) total-vm:12582912kB, anon-rss:7340032kB'",
   "Service died without application error; `journalctl -k | grep -i oom` shows oom-kill events",
   "`free -m` shows little available memory and swap exhausted"],
  "The host ran out of memory and the kernel killed the process with the highest OOM score, often a JVM with a heap too large for the host alongside other processes, or a leak.",
  ["Confirm: `dmesg -T | grep -iE 'out of memory|oom-kill'` and `journalctl -k --since today | grep -i oom`.",
   "See current memory consumers: `ps -eo pid,rss,cmd --sort=-rss | head`.",
   "Right-size: cap the JVM heap (-Xmx) to leave room for the OS and other processes, or move co-located services off the host.",
   "Protect critical daemons with `OOMScoreAdjust=-500` in their systemd units and set `MemoryMax=` for noisy ones.",
   "If memory grows steadily, capture a heap dump and fix the leak; add memory alerts at 90%."],
  "The host needs more RAM (instance resize) for a production workload.",
  "oom memory linux dmesg jvm infrastructure",
  ["app-server-03", "search-01", "jenkins-01"],
  ["our java app on {h} just dies randomly, no error in the app log",
   "dmesg on {h}: Out of memory: Killed process (java)"],
  "The kernel OOM killer on {h} killed the process because the host ran out of memory; confirm in `dmesg -T`/`journalctl -k` and see consumers with `ps --sort=-rss`. Cap the JVM heap to fit the host, move or limit noisy processes (MemoryMax=), protect critical daemons with OOMScoreAdjust, and fix any leak.",
  ("SEV3", "OOM kills on {h}", "The search service restarted 6 times in a day, causing failed queries each time."))

A(I, "Redis: 'OOM command not allowed when used memory > maxmemory'",
  ["(error) OOM command not allowed when used memory > 'maxmemory'.",
   "`redis-cli INFO memory` shows used_memory_human close to maxmemory_human and maxmemory_policy:noeviction",
   "Application cache writes fail while reads still work"],
  "Redis reached its maxmemory limit with the `noeviction` policy (or keys without TTL under a volatile-* policy), so write commands are rejected.",
  ["Check: `redis-cli -h cache-01 INFO memory` (used_memory, maxmemory, maxmemory_policy) and `INFO keyspace` (keys vs expires).",
   "For a pure cache, switch to an eviction policy: `redis-cli CONFIG SET maxmemory-policy allkeys-lru` and persist it in redis.conf.",
   "Find big keys: `redis-cli --bigkeys` / `redis-cli --memkeys`, and make sure the application sets TTLs.",
   "Increase maxmemory if the host has headroom (`CONFIG SET maxmemory 6gb`), keeping room for fork/copy-on-write during persistence.",
   "If Redis is used as a primary datastore (queues, sessions), do not enable eviction — scale memory instead."],
  "Redis holds non-cache data (queues/sessions) and memory cannot be increased.",
  "redis maxmemory eviction cache memory infrastructure",
  ["cache-01", "sessions-redis", "rate-limit-redis"],
  ["app errors 'OOM command not allowed when used memory > maxmemory' from {h}",
   "redis {h} full? writes fail"],
  "{h} has reached maxmemory under the noeviction policy; check `INFO memory` and `INFO keyspace`. For a pure cache set `maxmemory-policy allkeys-lru` (persist it in redis.conf), find big keys and ensure TTLs are set, or raise maxmemory with headroom — but never enable eviction when Redis stores queues or sessions.",
  ("SEV3", "Redis {h} rejecting writes", "Cache writes failed for 30 minutes, increasing database load by 3x."),
  ("sessions-redis (our session store, not a cache) is at maxmemory with noeviction, logins failing, and the VM has no more RAM",
   "Because the Redis instance stores sessions, enabling eviction would log users out or lose data, and memory cannot be increased on this VM. Escalate to the SRE/Infrastructure on-call to scale the instance or shard sessions."))

A(I, "Elasticsearch indices read-only: flood-stage disk watermark",
  ["ES log: 'flood stage disk watermark [95%] exceeded on [node-2][/var/lib/elasticsearch] free: 4.1gb[4.3%], all indices on this node will be marked read-only'",
   "Indexing errors: 'cluster_block_exception: index [logs-2025.06.01] blocked by: [FORBIDDEN/12/index read-only / allow delete (api)]' (or TOO_MANY_REQUESTS/12 on 7.x+)",
   "`GET _cat/allocation?v` shows disk.percent above 95"],
  "A data node crossed the flood-stage watermark (95% by default), so Elasticsearch applied the `index.blocks.read_only_allow_delete` block to protect itself; newer versions remove it automatically once usage drops below the high watermark.",
  ["Check usage: `curl -s localhost:9200/_cat/allocation?v` and `_cat/indices?v&s=store.size:desc`.",
   "Free space: delete old indices (`curl -XDELETE localhost:9200/logs-2025.03.*` per retention) or add nodes/disk; fix ILM retention policies.",
   "On older versions clear the block once space is freed: `curl -XPUT localhost:9200/_all/_settings -H 'Content-Type: application/json' -d '{\"index.blocks.read_only_allow_delete\": null}'`.",
   "Do not just raise the watermarks to 99%.",
   "Verify indexing resumes and set disk alerts at 80%."],
  "Freeing space requires deleting data that is still within its retention requirement.",
  "elasticsearch disk watermark read-only ilm logging infrastructure",
  ["es-logs-01", "es-data-3", "opensearch-prod"],
  ["logs stopped showing up in kibana since this morning, {h} error FORBIDDEN/12/index read-only",
   "elasticsearch flood stage disk watermark exceeded on {h}"],
  "{h} crossed the flood-stage watermark and Elasticsearch made the indices read-only; check `_cat/allocation` and the largest indices. Free space by deleting indices past retention (and fixing ILM) or adding capacity, clear `index.blocks.read_only_allow_delete` on older versions, and do not simply raise the watermarks.",
  ("SEV3", "Log indexing blocked on {h}", "No application logs were indexed for 3 hours, hampering an unrelated incident investigation."))

# ---------------------------------------------------------------------------
# UNANSWERABLE TASKS (no KB article covers them; correct action is to escalate)
# (area, ticket text, gold resolution)
# ---------------------------------------------------------------------------

UNANSWERABLE = [
    (N, "Internet at the Madrid branch is completely down. The ISP router (Movistar) has a red LOS light and nothing works, not even the phones.",
     "A red LOS (loss of signal) light means the carrier's fibre circuit is down, which is a provider fault the KB does not cover and cannot be fixed remotely. Escalate to Network Operations to open a fault ticket with the carrier and arrange the LTE/backup failover for the branch."),
    (N, "desk phones on 3rd floor all show 'Registering...' and no dial tone. cisco 8841s. since lunch",
     "IP phone registration to the call-control platform (CUCM) is not covered by the KB. Escalate to the Unified Communications / telephony team with the floor, phone models and start time."),
    (N, "The Zoom Room in the boardroom says 'Zoom Rooms is not connected' and the board meeting starts in 30 min!!!",
     "Meeting-room AV and Zoom Rooms are not covered by the KB. Escalate urgently to the AV / Collaboration support team (on-site) given the imminent board meeting."),
    (N, "We need a new 1 Gbps fibre line installed for the warehouse extension that opens in March. Who do I talk to?",
     "This is a new-circuit provisioning request, not an incident, and the KB has no procedure for it. Route it to Network Engineering planning / procurement to order the circuit with the carrier."),
    (N, "projector in meeting room 2.14 says no signal with every laptop, tried 3 HDMI cables",
     "Room AV hardware is outside the KB. Escalate to on-site desk-side / AV support to inspect the projector and room switcher."),
    (N, "Our office moved to a new building next month. Can IT plan the network (switches, wifi, cabling) for 120 desks?",
     "Office network design and cabling for a move is a project request that the KB does not cover. Escalate to Network Engineering (project intake) and Facilities for site survey and planning."),
    (N, "customers in Brazil get 'Error 1020 Access denied' on our website, it's a Cloudflare page. rest of the world fine",
     "Cloudflare WAF/firewall rules are not covered by the KB and changing them affects all customers. Escalate to the Web Platform / Security team that owns the Cloudflare account to review the rule blocking Brazil."),
    (N, "the satellite link at the offshore site is super slow since the storm yesterday, 2 Mbps instead of 50",
     "Satellite link degradation after a storm is a provider or site-hardware problem (dish alignment, weather) that the KB does not cover. Escalate to Network Operations to raise it with the satellite provider and the site's field technician."),
    (S, "Legal here. We received a litigation hold notice covering all email and Teams data of former employee M. Baker. Please make sure nothing is deleted.",
     "Litigation holds are legal/compliance actions that need Legal's formal instruction and an eDiscovery administrator; the KB does not cover them. Escalate to the Compliance / eDiscovery team, who will apply the hold under Legal's direction."),
    (S, "The police sent us an email requesting VPN login logs for one of our employees for the last 6 months. What should I send them?",
     "Law-enforcement data requests must go through Legal, which verifies the request and its legal basis; IT must not send any data directly. Escalate to Legal and the Security Operations lead, and do not reply to the requester."),
    (S, "Hi, I'm a customer and I want a copy of all personal data your company holds about me under GDPR.",
     "A data subject access request is a privacy/legal process with statutory deadlines, not an IT fix, and the KB does not cover it. Forward it to the Privacy Office / Data Protection Officer to log and handle the request."),
    (S, "I left my company laptop on the train this morning :( it's a Dell, I think it has bitlocker? what happens now",
     "A lost device needs a security and asset process (remote lock/wipe, BitLocker key verification, loss report) that the KB does not cover. Escalate to Security Operations and IT Asset Management, and record when and where it was lost."),
    (S, "HR wants to review the web browsing history and emails of an employee who is under a misconduct investigation. Can you pull that for them?",
     "Monitoring an individual employee requires formal HR and Legal authorisation and is handled by a restricted investigations process that the KB does not cover. Escalate to Security Operations (investigations) and do not pull any data without written approval."),
    (S, "A journalist just emailed asking us to confirm if we had a data breach last month. Should I answer?",
     "Press enquiries about security incidents must be handled by Communications together with Legal and Security leadership. Do not respond; escalate to Corporate Communications and the CISO's office."),
    (S, "The pentest company needs a signed authorisation letter to test our public IP ranges next week, can IT sign it?",
     "Authorising penetration tests is a security governance decision (scope, dates, legal sign-off) that the KB does not cover. Escalate to the Security governance / GRC team to approve the scope and sign the letter."),
    (S, "badge reader at the side entrance (door 3) isn't working and people are just propping the door open",
     "Physical access control is managed by Facilities / Physical Security, not IT, and a propped door is a physical security risk. Escalate to Facilities and Physical Security immediately."),
    (S, "auditors asked for SOC 2 evidence for control CC6.1 (logical access). where do we get it?",
     "Audit evidence collection is owned by the GRC / compliance team and is not covered by the KB. Escalate to GRC, who maintain the control evidence repository."),
    (S, "I got a paper letter from some 'domain registry' saying our domain expires unless we pay them 350 GBP. legit?",
     "This looks like a domain-renewal scam letter, but domain registrar accounts and renewals are managed outside the KB. Escalate to Security Operations (fraud awareness) and the team that owns the domain registrar account; do not pay."),
    (S, "Please give my new intern access to the payroll system ADP, he starts Monday",
     "Access to the payroll SaaS is granted by its business owner through an approval workflow that the KB does not describe. Escalate to Identity & Access Management / the HR systems owner to process an approved access request."),
    (S, "our cyber insurance renewal form asks how many endpoints have EDR and whether we do phishing simulations. who fills this?",
     "Insurance questionnaires are answered by Security governance with the Risk/Finance team, and the KB does not cover them. Route the form to the CISO's office / GRC."),
    (C, "AWS Health Dashboard shows an operational issue in eu-west-1: 'Increased API error rates for EC2'. Our deploys fail randomly.",
     "This is a cloud-provider outage; nothing in our configuration needs fixing and the KB does not cover provider incidents. Escalate to the Cloud Platform team to track the AWS Health event, pause non-urgent deploys, and communicate status."),
    (C, "Salesforce is down for the whole sales team. status.salesforce.com shows a major incident on our instance EU41.",
     "A SaaS vendor outage cannot be fixed internally and is not covered by the KB. Escalate to the Salesforce platform owner / vendor management to follow the vendor incident and inform users."),
    (C, "GitHub Actions jobs are all stuck in 'Queued' for everyone. githubstatus.com says Actions degraded.",
     "GitHub's own service is degraded, which is a vendor outage outside the KB. Escalate to the Developer Productivity team to monitor the GitHub status incident and decide on workarounds such as self-hosted runners."),
    (C, "can you bump our Snowflake warehouse to X-Large for quarter end? the finance queries are slow",
     "Snowflake sizing is not covered by the KB and has direct cost implications. Escalate to the Data Platform team, who own Snowflake and need budget approval for a larger warehouse."),
    (C, "I need access to our Oracle Cloud (OCI) tenancy to deploy a test VM",
     "Oracle Cloud Infrastructure is not one of the platforms covered by the KB. Escalate to the Cloud Platform team / OCI tenancy administrators via an access request."),
    (C, "Teams messages won't send for anyone, Microsoft 365 admin center shows incident TM812345 'Users can't send messages'",
     "This is a Microsoft 365 service incident that cannot be fixed internally and the KB does not cover it. Escalate to the Collaboration/M365 team to track the Microsoft incident and communicate to users."),
    (C, "We need a brand new AWS account for Project Falcon with VPC and SSO set up",
     "New account provisioning goes through the Cloud Platform account-vending process, which the KB does not cover. Escalate to the Cloud Platform team with the project's cost centre and owner."),
    (C, "Should we buy 3-year reserved instances or savings plans for the prod cluster? finance is asking",
     "Commitment purchases are a FinOps and budgeting decision rather than an IT fix, and the KB does not cover them. Escalate to the FinOps / Cloud Platform team for analysis and Finance approval."),
    (C, "Zendesk is loading super slowly for our support agents, their status page says 'degraded performance in EU pod'",
     "The vendor reports degraded performance, so this is a SaaS outage outside the KB. Escalate to the Zendesk application owner / vendor management to follow the incident and inform the support team."),
    (C, "Please transfer ownership of the Google Workspace shared drives of Lena who left last week to her manager",
     "Google Workspace administration is not covered by the KB and needs the offboarding owner's approval. Escalate to the Workspace administrators / offboarding team."),
    (C, "DigitalOcean droplet from the old marketing site is down, we don't know who has the login",
     "The DigitalOcean account is an unmanaged platform outside the KB and its ownership is unknown. Escalate to the Cloud Platform team and Security to identify the account owner and bring it under management."),
    (I, "Server in rack B12 at DC1 has an amber light on the front and keeps beeping. iLO says 'Power Supply 2 Failed'.",
     "A failed power supply is a hardware fault needing on-site replacement, which the KB does not cover. Escalate to Data Centre operations to log an HPE hardware case and replace PSU 2 (the server is running on its remaining supply)."),
    (I, "UPS in the server room is beeping and the display says ON BATTERY, 12 min remaining",
     "The UPS is on battery, which means a facility power problem with imminent risk of a hard shutdown; the KB has no procedure for it. Escalate immediately to Facilities and the Infrastructure on-call to restore mains power or start a controlled shutdown."),
    (I, "CICS region CICSP01 on the mainframe abended with ASRA, online transactions down",
     "The KB does not cover z/OS / CICS. Escalate to the Mainframe Systems team on-call with the region name and abend code."),
    (I, "SAP transport to PRD failed with return code 8, the change freeze starts tomorrow",
     "SAP transports are managed by SAP Basis and are not covered by the KB. Escalate to the SAP Basis team with the transport ID and the import log."),
    (I, "our AS/400 job queue QBATCH is held and the nightly invoices didn't print",
     "IBM i (AS/400) operations are not covered by the KB. Escalate to the IBM i operations team to release the job queue and rerun the invoice jobs."),
    (I, "Oracle RAC node 2 got evicted last night, CRS-1618 in the alert log. DB is running on node 1 only",
     "The KB covers PostgreSQL and MySQL but not Oracle RAC/Clusterware. Escalate to the Oracle DBA team with the alert and CRS logs."),
    (I, "vCenter shows esx-host-14 as 'Not Responding' and the console has a purple screen",
     "A purple diagnostic screen (PSOD) is a hypervisor crash, usually hardware or driver related, and is not covered by the KB. Escalate to the Virtualization team and the hardware vendor; affected VMs should restart via HA."),
    (I, "printer on 4th floor (HP M607) jams every few pages, tried different paper",
     "Printer hardware faults are handled by on-site desk support or the print vendor and are not covered by the KB. Escalate to on-site support to service the printer or log a vendor call."),
    (I, "my laptop screen is cracked, dropped it this morning. still works with external monitor",
     "Physical damage needs a hardware repair or replacement, which the KB does not cover. Escalate to on-site desk support / IT Asset Management to arrange a repair or loan device."),
    (I, "laptop battery looks swollen, the touchpad is bulging up. should I keep using it?",
     "A swollen lithium battery is a fire hazard: the user should stop using and unplug the laptop now. Escalate to on-site desk support for urgent replacement and safe disposal; the KB does not cover hardware faults."),
    (I, "backup tapes for March need to go to Iron Mountain offsite storage, who handles the pickup?",
     "Offsite tape logistics are handled by the Data Centre / backup operations team and are not covered by the KB. Escalate to Data Centre operations to schedule the pickup."),
    (I, "air conditioning in the comms room failed, thermometer says 35C and rising",
     "A cooling failure in a comms room puts equipment at risk of thermal shutdown and is a facilities emergency outside the KB. Escalate immediately to Facilities and the Infrastructure on-call; consider shutting down non-essential equipment."),
    (I, "Kafka consumer group 'billing-consumers' lag on topic orders keeps growing, 2 million messages behind",
     "The KB has no runbook for Kafka consumer lag. Escalate to the Streaming / Data Platform team that owns the Kafka cluster and the billing consumer, with the consumer group and lag figures."),
    (I, "RabbitMQ management UI shows 'Network partition detected' between rabbit@mq-01 and rabbit@mq-02",
     "RabbitMQ cluster partitions are not covered by the KB, and recovery risks message loss. Escalate to the Messaging / Platform team on-call."),
    (I, "mongo replica set member mongo-03 stuck in RECOVERING since last night",
     "The KB covers PostgreSQL and MySQL replication but not MongoDB. Escalate to the database team responsible for MongoDB with the replica-set status output."),
    (I, "DFS replication backlog between FS-LON and FS-NYC is 40k files, users see old versions",
     "Windows DFS Replication is not covered by the KB. Escalate to the Windows Server / File Services team with the backlog figures."),
    (I, "cassandra nodetool status shows one node DN since the reboot",
     "Cassandra operations are not covered by the KB. Escalate to the database/platform team that owns the Cassandra cluster."),
    (I, "Citrix says 'The remote session was disconnected because there are no Remote Desktop License Servers available'",
     "Citrix/RDS licensing is not covered by the KB and affects all VDI users. Escalate to the End-User Computing / VDI team to check the RD licensing server."),
    (I, "please install Adobe Acrobat Pro on my laptop, I need to edit PDFs",
     "Licensed software installation is a service request (licence approval and packaging) rather than an incident, and is not covered by the KB. Route it to the Software Request / End-User Computing team via the service catalogue."),
    (I, "can I get a second monitor and a docking station for my desk?",
     "Hardware requests go through procurement / IT Asset Management and are not covered by the KB. Route the request to IT Asset Management for approval and delivery."),
    (I, "can you approve my expense report in Concur? my manager is on holiday",
     "Expense approval is a Finance process, not an IT issue, and IT cannot approve it. Refer the user to Finance / the delegate approver process in Concur."),
]

# ---------------------------------------------------------------------------
# COMPOSITION: phrasing pools used to turn article material into tickets
# ---------------------------------------------------------------------------

SEED = 20250611
TEST_FRACTION = 0.3
TEST_THRESHOLD = round(TEST_FRACTION * 256)  # sha256(id)[0] < 77 -> test
VALIDATION_FRACTION = 0.1
VALIDATION_THRESHOLD = TEST_THRESHOLD + round(VALIDATION_FRACTION * 256)  # 77 <= sha256(id)[0] < 103 -> validation

PEOPLE = [
    ("Priya Raman", "Finance"), ("Marco Bianchi", "Sales"), ("Jenny Okafor", "Data Engineering"),
    ("Tom Becker", "Platform"), ("Aisha Khan", "Customer Support"), ("Lukas Novak", "Backend"),
    ("Sofia Alvarez", "Marketing"), ("Daniel Kim", "SRE"), ("Hannah Weiss", "HR"),
    ("Raj Patel", "Mobile"), ("Emma Lindqvist", "Legal Ops"), ("Omar Haddad", "Security Eng"),
    ("Chloe Martin", "Product"), ("Kenji Watanabe", "ML Platform"), ("Grace O'Neill", "Procurement"),
    ("Pavel Ivanov", "Payments"), ("Fatima Zahra", "QA"), ("Liam Murphy", "Warehouse Ops"),
]

# Body wrappers: (template for historical tickets / tasks). {body} {name} {dept} {first}
VOICES = [
    "{body}",
    "Hi,\n\n{body}\n\nThanks,\n{first}",
    "hey - {body} thx",
    "URGENT: {body} Need this fixed asap, people are waiting on me.",
    "Hello IT team,\n\nI hope you are well. {body} Could you please have a look when you have a moment?\n\nKind regards,\n{name}\n{dept}",
    "{body}\n\n(raised on behalf of {name}, {dept})",
    "{body}\n\nSent from my iPhone",
    "Not sure this is the right queue but {body}",
    "{body} This is the second time this week!!",
    "Quick one: {body}",
    "{first} from {dept} here. {body}",
    "{body} Any idea? cheers",
]

# Wrong guesses users add about the cause; `topic` words must not appear in
# the article's tags/title/cause or the guess would not actually be wrong.
WRONG_GUESSES = [
    ("dns", "Probably DNS again, it's always DNS."),
    ("firewall", "Maybe the firewall change from last night?"),
    ("vpn", "Could be the VPN acting up again."),
    ("certificate", "Maybe some certificate expired?"),
    ("wifi", "I think it's the wifi on our floor."),
    ("password", "I think my password expired."),
    ("disk", "Maybe the server is out of disk space?"),
    ("memory", "I guess the server needs more RAM."),
    ("antivirus", "Maybe the new antivirus is blocking it."),
    ("isp", "I bet it's our internet provider."),
    ("windows-update", "It started after the Windows updates so probably that."),
    ("database", "The database is probably slow again."),
    ("laptop", "My laptop is old, maybe it's just that."),
    ("browser", "Might be a browser cache thing?"),
    ("hacked", "Are we being hacked??"),
    ("deploy", "Someone probably deployed something broken."),
]
_GUESS_BLOCK = {
    "dns": {"dns", "resolver", "nxdomain", "servfail"},
    "firewall": {"firewall", "security-group", "fail2ban", "proxy", "scp", "bucket-policy"},
    "vpn": {"vpn", "ipsec", "wireguard", "anyconnect", "tunnel"},
    "certificate": {"certificate", "tls", "x509", "mtls", "eap-tls", "ssl", "pkix", "certbot", "saml"},
    "wifi": {"wifi", "802.1x", "dhcp"},
    "password": {"password", "lockout", "mfa", "sspr", "secrets-rotation", "expiredtoken", "credentials"},
    "disk": {"disk", "inode", "df", "storage", "volume", "pvc", "wal", "watermark", "diskpressure", "raid", "filesystem"},
    "memory": {"memory", "oom", "oomkilled", "maxmemory"},
    "antivirus": {"edr", "defender", "crowdstrike", "malware"},
    "isp": {"bgp", "isp", "peering", "mtu", "satellite"},
    "windows-update": set(),
    "database": {"database", "postgres", "mysql", "replication", "pgbouncer", "redis", "elasticsearch", "504"},
    "laptop": {"802.1x", "mdm", "edr", "wifi", "apipa", "duplex"},
    "browser": {"certificate", "tls", "saml", "sso", "oidc", "dns"},
    "hacked": {"phishing", "account-compromise", "leaked-key", "ransomware", "mfa", "fatigue", "malware", "edr", "bec", "secrets", "mitm", "host-key", "fail2ban", "inbox-rule"},
    "deploy": {"rollout", "crashloopbackoff", "deploy", "502", "imagepullbackoff", "release"},
}


def _guess_ok(topic: str, art: dict) -> bool:
    text = " ".join(art["tags"]).lower() + " " + art["title"].lower() + " " + art["cause"].lower()
    words = set(re.findall(r"[a-z0-9.\-]+", text))
    blocked = _GUESS_BLOCK.get(topic, set()) | {topic}
    return not (blocked & words)


_PROTECT = re.compile(r"[0-9_./:@'\"`\-\\{}()\[\]<>=]")


def add_typos(text: str, rng: random.Random, n: int) -> str:
    """Introduce n realistic typos in plain words (never in hosts/commands/errors)."""
    tokens = re.split(r"(\s+)", text)
    idx = [i for i, t in enumerate(tokens)
           if len(t) >= 5 and t.isalpha() and t.islower() and not _PROTECT.search(t)]
    rng.shuffle(idx)
    for i in idx[:n]:
        w = tokens[i]
        kind = rng.randrange(3)
        j = rng.randrange(1, len(w) - 2)
        if kind == 0:    # transpose
            w = w[:j] + w[j + 1] + w[j] + w[j + 2:]
        elif kind == 1:  # drop a letter
            w = w[:j] + w[j + 1:]
        else:            # double a letter
            w = w[:j] + w[j] + w[j:]
        tokens[i] = w
    return "".join(tokens)


def fill(text: str, host: str) -> str:
    return text.replace("{h}", host)


def _terminate(text: str) -> str:
    text = text.rstrip()
    return text if text[-1:] in ".!?)" else text + "."


def wrap(voice: str, body: str, person) -> str:
    name, dept = person
    before, rest = voice.split("{body}", 1)
    if before and before[-1] == " " and before.rstrip()[-1:] not in ".!?:":
        first = body.split(" ", 1)[0]
        if first[:1].isupper() and first[1:].islower():  # "Could" -> "could", keep "VPN"
            body = body[0].lower() + body[1:]
    if re.match(r"\s+[A-Z(]", rest):  # the voice continues with a new sentence
        body = _terminate(body)
    return (voice.replace("{body}", body).replace("{name}", name)
            .replace("{first}", name.split()[0]).replace("{dept}", dept))


def subject_from(ask: str) -> str:
    first = re.split(r"(?<=[.!?])\s+", ask.strip())[0]
    first = first.rstrip(".!? ")
    if len(first) > 72:
        cut = first[:72].rsplit(" ", 1)[0]
        first = cut.rstrip(",;:-") + "..."
    return first[0].upper() + first[1:]


def root_cause_for(art: dict, host: str) -> str:
    return f"{host}: {art['cause']}"


_STOP_TAGS = {"network", "security", "cloud", "infrastructure", "linux", "aws", "kubernetes"}


def related_article(art: dict, pool: list[dict]) -> str | None:
    best, best_score = None, 1
    mine = set(art["tags"]) - _STOP_TAGS
    for other in pool:
        if other["id"] == art["id"]:
            continue
        score = len(mine & (set(other["tags"]) - _STOP_TAGS))
        if score > best_score or (score == best_score and best is not None and score > 1 and other["id"] < best):
            best, best_score = other["id"], score
    return best


def rand_date(rng: random.Random) -> _dt.date:
    return _dt.date(2025, 1, 1) + _dt.timedelta(days=rng.randrange(365))


_SENT = re.compile(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?])\s+(?=[A-Z`(])")


def n_sentences(text: str) -> int:
    return len([s for s in _SENT.split(text.strip()) if s])


def split_for(task_id: str) -> str:
    """test as before; validation is carved out of what was train (the next byte range), so test never moves."""
    byte = hashlib.sha256(task_id.encode("utf-8")).digest()[0]
    return "test" if byte < TEST_THRESHOLD else "validation" if byte < VALIDATION_THRESHOLD else "train"


# ---------------------------------------------------------------------------
# BUILDERS
# ---------------------------------------------------------------------------

def public_article(a: dict) -> dict:
    return {k: a[k] for k in ("id", "area", "title", "symptoms", "cause", "resolution",
                              "escalate_when", "tags")}


def build_tickets(arts: list[dict]) -> list[dict]:
    rng = random.Random(SEED + 1)
    rel = {a["id"]: related_article(a, arts) for a in arts}
    drafts = []
    for a in arts:
        hosts, asks = a["_hosts"], a["_asks"]
        for k in range(3):
            host = hosts[k % len(hosts)]
            ask = fill(asks[k % len(asks)], host)
            person = PEOPLE[rng.randrange(len(PEOPLE))]
            voice = VOICES[rng.randrange(len(VOICES))]
            ids = [a["id"]]
            if rel[a["id"]] and rng.random() < 0.25:
                ids.append(rel[a["id"]])
            drafts.append({
                "title": subject_from(ask),
                "body": wrap(voice, ask, person),
                "resolution_note": f"Followed {a['id']}. {fill(a['_fix'], host)} Confirmed with {person[0].split()[0]} that it works again and closed.",
                "article_ids": ids,
                "status": "resolved",
            })
        if a["_escal"]:
            host = hosts[1 % len(hosts)]
            text, gold = a["_escal"]
            person = PEOPLE[rng.randrange(len(PEOPLE))]
            drafts.append({
                "title": subject_from(fill(text, host)),
                "body": wrap(VOICES[rng.randrange(len(VOICES))], fill(text, host), person),
                "resolution_note": f"Checked against {a['id']}; escalation criteria met. {fill(gold, host)}",
                "article_ids": [a["id"]],
                "status": "escalated",
            })
    rng.shuffle(drafts)
    dates = sorted(rand_date(rng) for _ in drafts)
    out = []
    for i, (d, day) in enumerate(zip(drafts, dates)):
        out.append({"id": f"TCK-{10001 + i}", "title": d["title"], "body": d["body"],
                    "resolution_note": d["resolution_note"], "article_ids": d["article_ids"],
                    "opened": day.isoformat(), "status": d["status"]})
    return out


_DETECTION = [
    "monitoring paged the on-call engineer",
    "synthetic checks started failing",
    "the service desk received a burst of user reports",
    "an engineer noticed errors on the dashboard",
    "a customer escalation reached support",
    "the SLO burn-rate alert fired",
]
_FOLLOWUP = [
    "Follow-up actions: alerting on the leading indicator and a runbook link in the alert.",
    "Follow-up actions: add the check to the change checklist and automate the fix.",
    "Follow-up actions: capacity review and a regression test for the failure mode.",
    "Follow-up actions were tracked in the postmortem; no data loss occurred.",
]


# Which resource each incident happened on (index into the article's hosts, or
# a literal name); default is hosts[2].
INC_HOST = {
    "KB-NET-0002": 1, "KB-NET-0003": 1, "KB-NET-0006": 1, "KB-NET-0012": "vpn-gw-01",
    "KB-NET-0014": 1, "KB-NET-0016": 0, "KB-NET-0019": 0, "KB-NET-0022": 0, "KB-NET-0025": 0,
    "KB-NET-0026": 0, "KB-NET-0029": 0, "KB-NET-0030": 0, "KB-NET-0033": 1,
    "KB-SEC-0001": 0, "KB-SEC-0003": 1, "KB-SEC-0004": 0, "KB-SEC-0005": 0, "KB-SEC-0007": 0,
    "KB-SEC-0008": "okta-prod", "KB-SEC-0010": 1, "KB-SEC-0011": 1, "KB-SEC-0013": 0,
    "KB-SEC-0014": 1, "KB-SEC-0015": "entra-conditional-access", "KB-SEC-0016": 0,
    "KB-SEC-0021": 0, "KB-SEC-0022": 0, "KB-SEC-0023": 0, "KB-SEC-0024": 0, "KB-SEC-0025": 0,
    "KB-SEC-0026": 0, "KB-SEC-0029": 0, "KB-SEC-0031": 0, "KB-SEC-0033": 1,
    "KB-CLD-0001": 0, "KB-CLD-0004": 0, "KB-CLD-0005": 1, "KB-CLD-0006": 1, "KB-CLD-0008": 0,
    "KB-CLD-0009": 0, "KB-CLD-0015": 0, "KB-CLD-0017": 0, "KB-CLD-0018": 0, "KB-CLD-0019": 0,
    "KB-CLD-0020": 0, "KB-CLD-0021": 1, "KB-CLD-0022": 0, "KB-CLD-0023": 0, "KB-CLD-0024": 0,
    "KB-CLD-0026": 0, "KB-CLD-0027": 1, "KB-CLD-0028": 0, "KB-CLD-0029": 0, "KB-CLD-0032": 0,
    "KB-CLD-0034": 0, "KB-CLD-0035": 1, "KB-CLD-0036": 0,
    "KB-INF-0003": 0, "KB-INF-0004": 1, "KB-INF-0010": 0, "KB-INF-0013": 0, "KB-INF-0014": 0,
    "KB-INF-0018": 1, "KB-INF-0022": 0, "KB-INF-0033": 1, "KB-INF-0034": 0, "KB-INF-0035": 0,
}


def incident_host(a: dict) -> str:
    choice = INC_HOST.get(a["id"], 2)
    if isinstance(choice, str):
        return choice
    return a["_hosts"][choice % len(a["_hosts"])]


def build_incidents(arts: list[dict]) -> list[dict]:
    rng = random.Random(SEED + 2)
    rel = {a["id"]: related_article(a, arts) for a in arts}
    drafts = []
    for a in arts:
        sev, title, impact = a["_imp"]
        host = incident_host(a)
        start = rng.randrange(0, 24 * 60)
        dur = {"SEV1": rng.randrange(25, 180), "SEV2": rng.randrange(15, 120),
               "SEV3": rng.randrange(20, 240), "SEV4": rng.randrange(30, 480)}[sev]
        t0 = f"{start // 60:02d}:{start % 60:02d}"
        end = (start + dur) % (24 * 60)
        t1 = f"{end // 60:02d}:{end % 60:02d}"
        sym = a["symptoms"][0].rstrip(".")
        summary = (f"At {t0} UTC {_DETECTION[rng.randrange(len(_DETECTION))]} for {host} "
                   f"(first signal: {sym}). {fill(impact, host)} "
                   f"Responders followed {a['id']} and mitigated at {t1} UTC, {dur} minutes after detection. "
                   f"{_FOLLOWUP[rng.randrange(len(_FOLLOWUP))]}")
        ids = [a["id"]]
        if rel[a["id"]] and rng.random() < 0.4:
            ids.append(rel[a["id"]])
        drafts.append({"title": fill(title, host), "summary": summary,
                       "root_cause": root_cause_for(a, host), "article_ids": ids,
                       "severity": sev, "date": rand_date(rng)})
    drafts.sort(key=lambda d: (d["date"], d["title"]))
    return [{"id": f"INC-{2001 + i}", "title": d["title"], "summary": d["summary"],
             "root_cause": d["root_cause"], "article_ids": d["article_ids"],
             "severity": d["severity"], "date": d["date"].isoformat()}
            for i, d in enumerate(drafts)]


def user_voice(ask: str, art: dict | None, rng: random.Random, allow_short: bool = True) -> str:
    """Turn an ask into a realistic, noisy user ticket."""
    body = ask
    sentences = re.split(r"(?<=[.!?])\s+", body.strip())
    if allow_short and len(sentences) >= 2 and len(sentences[0].split()) >= 6 and rng.random() < 0.25:
        body = sentences[0]                      # terse / vague version
    if art is not None and rng.random() < 0.35:  # wrong guess about the cause
        low = body.lower()
        options = [g for t, g in WRONG_GUESSES
                   if _guess_ok(t, art) and t.split("-")[0] not in low and "?" not in low[-40:]]
        if options:
            guess = options[rng.randrange(len(options))]
            body = f"{_terminate(body)} {guess}" if rng.random() < 0.6 else f"{guess} {body}"
    if rng.random() < 0.35:
        body = add_typos(body, rng, rng.randrange(1, 4))
    first = body.split(" ", 1)[0]
    if rng.random() < 0.15 and first[:1].isupper() and first[1:].islower():
        body = body[0].lower() + body[1:]
    person = PEOPLE[rng.randrange(len(PEOPLE))]
    vi = rng.randrange(len(VOICES))
    if "asap" in body.lower() and "asap" in VOICES[vi]:
        vi = (vi + 1) % len(VOICES)
    return wrap(VOICES[vi], body, person)


RULED_OUT_STEPS = {
    "KB-CLD-0020": (3,), "KB-CLD-0025": (2, 3), "KB-CLD-0029": (2,), "KB-INF-0005": (2,), "KB-INF-0017": (3,),
    "KB-INF-0023": (3, 4), "KB-INF-0025": (2, 3), "KB-INF-0034": (1, 3), "KB-NET-0003": (2,), "KB-NET-0010": (2,),
    "KB-NET-0012": (2, 4), "KB-SEC-0005": (2,), "KB-SEC-0008": (1, 2, 3), "KB-SEC-0010": (3,), "KB-SEC-0011": (0,),
    "KB-SEC-0024": (1, 2), "KB-SEC-0028": (1,), "KB-SEC-0029": (2, 4),
}
"""For the ticket that meets an article's escalation condition: the article's steps (by index) that its gold forbids
or says will not help there ("do not raise the limit", "restarting or rolling back the pods will not help", "client-side
changes will not help"). Read by hand from each escalation ticket's gold; an article missing here has none (its steps
agree with the gold: isolate, revoke, collect evidence, then escalate) or none that an honest answer would not also
say in passing ("bring the session back" once the peer has fixed its leak, "review mount options" afterwards), or
whose head, what the reader sees of it, is the safe part ("If SSPR is not possible, verify identity out of band" of a
step that goes on "and reset")."""


def build_tasks(arts: list[dict]) -> list[dict]:
    rng = random.Random(SEED + 3)
    drafts = []
    for a in arts:
        hosts, asks = a["_hosts"], a["_asks"]
        for k in range(2):
            # use different host/ask pairings than the historical tickets
            host = hosts[(k + 2) % len(hosts)] if len(hosts) > 3 else hosts[(k * 2 + 1) % len(hosts)]
            ask = fill(asks[(k + 1) % len(asks)], host)
            drafts.append({
                "ticket": user_voice(ask, a, rng),
                "gold_resolution": fill(a["_fix"], host),
                "gold_article_ids": [a["id"]],
                "should_escalate": False,
                "answerable": True,
                "area": a["area"],
            })
    escal_arts = [a for a in arts if a["_escal"]]
    chosen = sorted(rng.sample(range(len(escal_arts)), k=min(36, len(escal_arts))))
    for i in chosen:
        a = escal_arts[i]
        host = a["_hosts"][0]
        text, gold = a["_escal"]
        drafts.append({
            "ticket": user_voice(fill(text, host), a, rng, allow_short=False),
            "gold_resolution": fill(gold, host),
            "gold_article_ids": [a["id"]],
            "should_escalate": True,
            "answerable": True,
            "area": a["area"],
            "ruled_out_steps": list(RULED_OUT_STEPS.get(a["id"], ())),
        })
    for area, text, gold in UNANSWERABLE:
        drafts.append({
            "ticket": user_voice(text, None, rng, allow_short=False),
            "gold_resolution": gold,
            "gold_article_ids": [],
            "should_escalate": True,
            "answerable": False,
            "area": area,
        })
    rng.shuffle(drafts)
    out = []
    for i, d in enumerate(drafts):
        tid = f"T-{i + 1:04d}"
        out.append({"id": tid, **d, "split": split_for(tid)})
    return out


# ---------------------------------------------------------------------------
# VALIDATION + OUTPUT
# ---------------------------------------------------------------------------

def validate(articles, tickets, incidents, tasks) -> None:
    all_ids = [x["id"] for coll in (articles, tickets, incidents, tasks) for x in coll]
    assert len(all_ids) == len(set(all_ids)), "duplicate ids"
    kb = {a["id"] for a in articles}
    by_id = {a["id"]: a for a in articles}
    assert len(articles) >= 120, len(articles)
    for area, code in AREA_CODES.items():
        n = sum(a["area"] == area for a in articles)
        assert n >= 30, (area, n)
        assert all(a["id"].startswith(f"KB-{AREA_CODES[a['area']]}-") for a in articles)
        assert any(t["area"] == area for t in tasks), area
    for a in articles:
        assert 2 <= len(a["symptoms"]) <= 4 and 3 <= len(a["resolution"]) <= 6, a["id"]
        assert a["escalate_when"] and a["cause"] and a["tags"], a["id"]
    assert len(tickets) >= 400, len(tickets)
    for t in tickets:
        assert 1 <= len(t["article_ids"]) <= 2 and set(t["article_ids"]) <= kb, t["id"]
        assert t["status"] in ("resolved", "escalated") and t["opened"].startswith("2025-"), t["id"]
    assert len(incidents) >= 100, len(incidents)
    for inc in incidents:
        assert 1 <= len(inc["article_ids"]) <= 3 and set(inc["article_ids"]) <= kb, inc["id"]
        assert inc["severity"] in ("SEV1", "SEV2", "SEV3", "SEV4") and inc["date"].startswith("2025-")
        assert 2 <= n_sentences(inc["summary"]) <= 5, (inc["id"], n_sentences(inc["summary"]))
    assert len(tasks) >= 300, len(tasks)
    for t in tasks:
        assert set(t["gold_article_ids"]) <= kb, t["id"]
        assert t["split"] in ("train", "validation", "test") and t["split"] == split_for(t["id"])
        if t["answerable"]:
            assert 1 <= len(t["gold_article_ids"]) <= 2, t["id"]
        else:
            assert t["gold_article_ids"] == [] and t["should_escalate"], t["id"]
        assert 2 <= n_sentences(t["gold_resolution"]) <= 4, (t["id"], t["gold_resolution"])
        assert all(0 <= i < len(by_id[t["gold_article_ids"][0]]["resolution"]) for i in t.get("ruled_out_steps", ())), t
    annotated = {t["gold_article_ids"][0] for t in tasks if "ruled_out_steps" in t}
    assert set(RULED_OUT_STEPS) <= annotated, set(RULED_OUT_STEPS) - annotated
    splits = {t["split"] for t in tasks}
    assert splits == {"train", "validation", "test"}, splits
    unans = sum(not t["answerable"] for t in tasks) / len(tasks)
    assert 0.10 <= unans <= 0.18, unans
    esc_ans = sum(t["answerable"] and t["should_escalate"] for t in tasks)
    assert esc_ans > 0
    blob = json.dumps([articles, tickets, incidents, tasks])
    assert "{h}" not in blob and "{body}" not in blob and "{name}" not in blob


def counts_table(articles, tickets, incidents, tasks) -> str:
    lines = ["| area | articles | tasks (train/validation/test) | answerable | should_escalate |",
             "|---|---|---|---|---|"]
    for area in AREA_CODES:
        ts = [t for t in tasks if t["area"] == area]
        lines.append(
            f"| {area} | {sum(a['area'] == area for a in articles)} | "
            f"{len(ts)} ({'/'.join(str(sum(t['split'] == s for t in ts)) for s in ('train', 'validation', 'test'))}) | "
            f"{sum(t['answerable'] for t in ts)} | {sum(t['should_escalate'] for t in ts)} |")
    return "\n".join(lines)


README = """# Triage corpus (`drill.envs.triage`)

Synthetic but technically grounded IT-operations knowledge base used by the
triage environment: an agent receives a user ticket, searches the KB (and,
optionally, historical tickets and incidents) and must propose the correct
resolution, cite the right article(s), and decide whether to escalate.

**Generated file - do not edit the JSON by hand.** Rebuild with

    python tools/build_triage_corpus.py

The build is deterministic (standard library only, fixed seed `{seed}`); running
it twice produces byte-identical files. It ends with assertions (unique ids,
every referenced article exists, minimum counts, every area covered, both
splits non-empty, unanswerable share within 10-18%).

## Files and counts

| file | records | content |
|---|---|---|
| `articles.json` | {n_art} | KB articles / runbooks |
| `tickets.json` | {n_tck} | historical, already handled tickets |
| `incidents.json` | {n_inc} | past incidents (postmortem summaries) |
| `tasks.json` | {n_task} | evaluation tickets for the agent ({n_train} train / {n_validation} validation / {n_test} test) |

{table}

Tasks: {n_unans} unanswerable ({pct_unans:.1f}%), {n_esc_ans} answerable-but-escalate,
{n_plain} answerable and resolvable without escalation.
Historical tickets: {n_resolved} resolved, {n_escalated} escalated.
Incidents by severity: {sev}.

## Fields

### articles.json
- `id` - `KB-<AREA>-NNNN`, AREA in NET, SEC, CLD, INF.
- `area` - `networking` | `security` | `cloud` | `infrastructure`.
- `title` - short problem statement.
- `symptoms` - 2-4 observable symptoms, including verbatim error messages.
- `cause` - 1-3 sentences on why it happens.
- `resolution` - 3-6 ordered steps with concrete commands.
- `escalate_when` - the condition under which the front line must escalate instead of fixing.
- `tags` - lowercase keywords.

### tickets.json (historical)
`id` (`TCK-1xxxx`), `title`, `body` (as the user wrote it), `resolution_note`
(what the agent did), `article_ids` (1-2 existing KB ids), `opened` (ISO date,
2025), `status` (`resolved` | `escalated`).

### incidents.json
`id` (`INC-2xxx`), `title`, `summary` (timeline and impact), `root_cause`,
`article_ids` (1-3 KB ids), `severity` (`SEV1`..`SEV4`), `date` (ISO, 2025).

### tasks.json
- `id` - `T-NNNN`.
- `ticket` - the user's text: vague, sometimes with typos, sometimes with a
  wrong guess about the cause, varied tone and length.
- `gold_resolution` - 2-4 sentences describing the correct handling; for
  answerable tasks it is consistent with the gold article's resolution steps.
- `gold_article_ids` - 1 KB id for answerable tasks, `[]` for unanswerable ones.
- `answerable` - `true` if the KB contains the article that resolves (or
  explicitly tells how to triage) the ticket. `false` means no article covers
  it (vendor outage, hardware needing on-site work, legal/HR/privacy request,
  platform not covered by the KB); the correct behaviour is then to escalate
  and say to whom and why, not to invent a fix or cite an article.
- `should_escalate` - `true` if the correct action is to hand the ticket to
  another team. Always `true` for unanswerable tasks; for answerable tasks it
  is `true` when the ticket meets the gold article's `escalate_when`
  condition (e.g. production impact, a provider-side fault, a privileged
  request, a confirmed compromise).
- `area` - area of the problem (also set for unanswerable tasks).
- `ruled_out_steps` - answerable escalation tasks only: the indices of the
  gold article's `resolution` steps that the gold forbids or says will not
  help for this ticket (an answer that orders one is wrong); `[]` when none.
- `split` - `train`, `validation` or `test`.

## Split

`split` is a pure function of the task id, b = `sha256(id.encode()).digest()[0]`:
`test` if b < {thr} (= round(0.3 * 256)), `validation` if {thr} <= b < {vthr}
(another round(0.1 * 256), carved out of what was train, so the test split
is the same as before validation existed), otherwise `train` - about 60/10/30
and stable across rebuilds as long as the ids are unchanged. The split is
recorded in each task.

## Notes
- Tickets and tasks are composed from per-article, hand-written user phrasings
  with varying hosts, voices, typos and wrong guesses; tasks use different
  host/phrasing combinations than the historical tickets, but related history
  is intentionally searchable, as in a real service desk.
- Hostnames, accounts and IP ranges are fictitious (example.com, RFC 5737/1918 ranges).
"""


def write_json(path: Path, data) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    articles = [public_article(a) for a in sorted(ARTICLES, key=lambda a: a["id"])]
    src = sorted(ARTICLES, key=lambda a: a["id"])
    tickets = build_tickets(src)
    incidents = build_incidents(src)
    tasks = build_tasks(src)
    validate(articles, tickets, incidents, tasks)

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    write_json(OUT_DIR / "articles.json", articles)
    write_json(OUT_DIR / "tickets.json", sorted(tickets, key=lambda t: t["id"]))
    write_json(OUT_DIR / "incidents.json", sorted(incidents, key=lambda t: t["id"]))
    write_json(OUT_DIR / "tasks.json", sorted(tasks, key=lambda t: t["id"]))

    sev = {}
    for inc in incidents:
        sev[inc["severity"]] = sev.get(inc["severity"], 0) + 1
    n_unans = sum(not t["answerable"] for t in tasks)
    readme = README.format(
        seed=SEED, n_art=len(articles), n_tck=len(tickets), n_inc=len(incidents),
        n_task=len(tasks), n_train=sum(t["split"] == "train" for t in tasks),
        n_validation=sum(t["split"] == "validation" for t in tasks), n_test=sum(t["split"] == "test" for t in tasks),
        table=counts_table(articles, tickets, incidents, tasks),
        n_unans=n_unans, pct_unans=100 * n_unans / len(tasks),
        n_esc_ans=sum(t["answerable"] and t["should_escalate"] for t in tasks),
        n_plain=sum(t["answerable"] and not t["should_escalate"] for t in tasks),
        n_resolved=sum(t["status"] == "resolved" for t in tickets),
        n_escalated=sum(t["status"] == "escalated" for t in tickets),
        sev=", ".join(f"{k} {sev[k]}" for k in sorted(sev)), thr=TEST_THRESHOLD, vthr=VALIDATION_THRESHOLD)
    (OUT_DIR / "README.md").write_text(readme, encoding="utf-8")
    print(f"wrote {len(articles)} articles, {len(tickets)} tickets, {len(incidents)} incidents, "
          f"{len(tasks)} tasks to {OUT_DIR}")


if __name__ == "__main__":
    main()

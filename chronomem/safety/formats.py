"""Known credential formats: the prefixes and structures vendors document for their tokens.

Each entry is (kind, pattern, group holding the secret). The catalogue follows the public
descriptions vendors give of their token formats (and the public rule catalogues of secret
scanners built from them) for the families a developer's notes touch: clouds, code hosts,
package registries, chat, payment, observability, AI APIs and encryption tools. detect-secrets
(chronomem/safety/secrets.py) covers the older formats; these are the ones it predates or
lacks. A format is only listed when its prefix or structure is distinctive enough to need no
context: tokens without one (Datadog's 32 hex, Cloudflare's 40 characters, Heroku's UUIDs)
are caught by the context rules in chronomem/safety/context.py when a note names them.
"""

from __future__ import annotations

import re

_B = r"(?<![A-Za-z0-9_\-])"  # the token starts at a word edge
_E = r"(?![A-Za-z0-9_\-])"  # and ends at one

#: (kind, pattern, group): group 0 is the whole match.
FORMATS: tuple[tuple[str, str, int], ...] = (
    # clouds
    ("aws-key", _B + r"(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA|ANPA|ANVA|AIPA)[A-Z2-7]{16}" + _E, 0),
    ("aws-key", r"(?i)\baws.{0,20}?(?:secret|key).{0,20}?[=:]\s*[\"'`]?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])", 1),
    ("google-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, 0),
    ("google-oauth-secret", _B + r"GOCSPX-[A-Za-z0-9_\-]{28}" + _E, 0),
    ("google-oauth-token", _B + r"ya29\.[A-Za-z0-9_\-]{30,}", 0),
    ("google-oauth-token", r"(?<![A-Za-z0-9])1//0[A-Za-z0-9_\-]{40,}", 0),
    ("azure-client-secret", r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])", 0),
    ("azure-storage-key", r"(?i)AccountKey=([A-Za-z0-9+/]{80,}={0,2})", 1),
    ("digitalocean-token", _B + r"do[opr]_v1_[a-f0-9]{64}" + _E, 0),
    ("alibaba-access-key", _B + r"LTAI[A-Za-z0-9]{12,24}" + _E, 0),
    ("heroku-token", _B + r"HRKU-[A-Za-z0-9_\-]{20,}", 0),
    ("flyio-token", _B + r"fo1_[A-Za-z0-9_\-]{40,}", 0),
    ("flyio-token", r"\bFlyV1\s+fm\d_[A-Za-z0-9+/=_\-]{40,}", 0),
    ("cloudflare-origin-ca-key", _B + r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}" + _E, 0),
    ("doppler-token", _B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}" + _E, 0),
    ("vault-token", _B + r"hv[sbr]\.[A-Za-z0-9_\-]{24,}", 0),
    ("terraform-cloud-token", _B + r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,}", 0),
    ("pulumi-token", _B + r"pul-[a-f0-9]{40}" + _E, 0),
    ("databricks-token", _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E, 0),
    ("supabase-token", _B + r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,})" + _E, 0),
    ("planetscale-token", _B + r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=\-]{32,64}" + _E, 0),
    ("netlify-token", _B + r"nfp_[A-Za-z0-9]{36,}" + _E, 0),
    ("render-token", _B + r"rnd_[A-Za-z0-9]{32,}" + _E, 0),
    ("onepassword-token", _B + r"ops_eyJ[A-Za-z0-9+/=_\-]{50,}", 0),
    # code hosts and CI
    ("github-token", _B + r"gh[pousr]_[A-Za-z0-9]{36,}" + _E, 0),
    ("github-token", _B + r"github_pat_[A-Za-z0-9_]{60,}", 0),
    ("gitlab-token", _B + r"gl(?:pat|dt|rt|ptt|ft|imt|agent|soat|cbt|oas|ffct|wt)-[A-Za-z0-9_\-]{20,}", 0),
    ("gitlab-token", _B + r"GR1348941[A-Za-z0-9_\-]{20,}", 0),
    ("bitbucket-token", _B + r"ATBB[A-Za-z0-9_=.\-]{28,}" + _E, 0),
    ("atlassian-token", _B + r"ATATT3[A-Za-z0-9_=\-]{60,}", 0),
    ("circleci-token", _B + r"CCIPAT_[A-Za-z0-9]{20,}_[a-f0-9]{40}" + _E, 0),
    ("buildkite-token", _B + r"bkua_[a-f0-9]{40}" + _E, 0),
    ("sonarqube-token", _B + r"sq[pua]_[a-f0-9]{40}" + _E, 0),
    # package registries
    ("npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E, 0),
    ("pypi-token", _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}", 0),
    ("rubygems-token", _B + r"rubygems_[a-f0-9]{48}" + _E, 0),
    ("nuget-key", _B + r"oy2[a-z0-9]{43}" + _E, 0),
    ("docker-token", _B + r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}", 0),
    ("crates-io-token", _B + r"cio[A-Za-z0-9]{32}" + _E, 0),
    ("clojars-token", _B + r"CLOJARS_[a-z0-9]{60}" + _E, 0),
    # chat
    ("slack-token", _B + r"xox[abposre]-(?:\d+-)+[A-Za-z0-9\-]{10,}", 0),
    ("slack-token", _B + r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+" + _E, 0),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{20,}", 0),
    ("discord-webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{40,}", 0),
    ("teams-webhook", r"https://[A-Za-z0-9\-]+\.webhook\.office\.com/webhookb2/[^\s\"'`<>]{40,}", 0),
    ("telegram-bot-token", r"(?<![0-9A-Za-z])\d{8,10}:AA[A-Za-z0-9_\-]{33}" + _E, 0),
    # payment
    ("stripe-key", _B + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,}" + _E, 0),
    ("stripe-webhook-secret", _B + r"whsec_[A-Za-z0-9+/=]{32,}", 0),
    ("square-token", _B + r"(?:sq0atp|sq0csp)-[A-Za-z0-9_\-]{22,}" + _E, 0),
    ("square-token", _B + r"EAAA[A-Za-z0-9_\-]{60}" + _E, 0),
    ("braintree-token", r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}", 0),
    ("shopify-token", _B + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _E, 0),
    ("razorpay-key", _B + r"rzp_(?:live|test)_[A-Za-z0-9]{14}" + _E, 0),
    ("flutterwave-key", _B + r"FLWSECK(?:_TEST)?-[a-h0-9]{32}-X" + _E, 0),
    ("shippo-token", _B + r"shippo_(?:live|test)_[a-f0-9]{40}" + _E, 0),
    ("easypost-key", _B + r"EZ[AT]K[A-Za-z0-9]{54}" + _E, 0),
    # mail and messaging
    ("sendgrid-key", _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E, 0),
    ("mailgun-key", _B + r"key-[a-f0-9]{32}" + _E, 0),
    ("brevo-key", _B + r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}" + _E, 0),
    ("resend-key", _B + r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}" + _E, 0),
    # observability and tools
    ("sentry-dsn", r"https?://([a-f0-9]{32})(?::([a-f0-9]{32}))?@[A-Za-z0-9.\-]+(?::\d+)?/\d+", 0),
    ("sentry-token", _B + r"sntry[su]_[A-Za-z0-9+/=_\-]{30,}", 0),
    ("grafana-token", _B + r"glc_[A-Za-z0-9+/]{32,}={0,2}", 0),
    ("grafana-token", _B + r"glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}" + _E, 0),
    ("newrelic-key", _B + r"NR(?:AK|JS|II|AA)-[A-Za-z0-9]{19,32}" + _E, 0),
    ("dynatrace-token", _B + r"dt0[a-z]\d{2}\.[A-Z0-9]{24}\.[A-Z0-9]{64}" + _E, 0),
    ("honeycomb-key", _B + r"hca[ik]k_[a-z0-9]{50,}" + _E, 0),
    ("postman-key", _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _E, 0),
    ("linear-key", _B + r"lin_(?:api|oauth)_[A-Za-z0-9]{40}" + _E, 0),
    ("notion-token", _B + r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})" + _E, 0),
    ("figma-token", _B + r"fig[dou]_[A-Za-z0-9_\-]{40,}", 0),
    ("airtable-token", _B + r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}" + _E, 0),
    ("mapbox-secret-token", _B + r"sk\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]{20,}", 0),
    ("typeform-token", _B + r"tfp_[A-Za-z0-9_\-.=]{50,}", 0),
    ("contentful-token", _B + r"CFPAT-[A-Za-z0-9_\-]{43}" + _E, 0),
    ("dropbox-token", _B + r"sl\.[A-Za-z0-9_\-]{130,}", 0),
    ("launchdarkly-key", _B + r"(?:api|sdk)-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}" + _E, 0),
    # AI APIs
    ("anthropic-key", _B + r"sk-ant-(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_\-]{32,}", 0),
    ("openai-key", _B + r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{32,}", 0),
    ("openai-key", _B + r"sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}" + _E, 0),
    ("openrouter-key", _B + r"sk-or-v\d-[a-f0-9]{64}" + _E, 0),
    ("api-key", _B + r"sk-[A-Za-z0-9]{32,}" + _E, 0),
    ("huggingface-token", _B + r"(?:hf_|api_org_)[A-Za-z0-9]{30,}" + _E, 0),
    ("replicate-token", _B + r"r8_[A-Za-z0-9]{37}" + _E, 0),
    ("groq-key", _B + r"gsk_[A-Za-z0-9]{48,}" + _E, 0),
    ("perplexity-key", _B + r"pplx-[A-Za-z0-9]{40,}" + _E, 0),
    ("xai-key", _B + r"xai-[A-Za-z0-9]{60,}" + _E, 0),
    ("langsmith-key", _B + r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _E, 0),
    # encryption tools and generic structures
    ("age-secret-key", _B + r"AGE-SECRET-KEY-(?:PQ-)?1[02-9AC-HJ-NP-Z]{50,}" + _E, 0),
    ("password-hash", r"(?<![\w$])\$(?:2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}|argon2(?:id|i|d)\$[^\s\"'`]{30,}|[56]\$[^\s$]{0,16}\$[./A-Za-z0-9]{43,86})", 0),
    ("jwt", _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-+/=]*", 0),
    # scheme://user:password@host, the user possibly empty (redis://:password@cache:6379, Redis's AUTH without ACLs)
    ("password-in-url", r"(?<![a-zA-Z0-9+.\-])[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@\"'`<>]*:([^\s@/\"'`<>]{3,})@", 1),
    ("bearer-token", r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{20,}=*)(?![A-Za-z0-9\-._~+/=])", 1),
    ("basic-auth", r"(?i)\bauthorization:\s*basic\s+([A-Za-z0-9+/]{8,}={0,2})", 1),
    (
        "token-in-url",
        r"(?i)[?&](?:access_token|api_?key|apikey|auth|client_secret|key|password|passwd|pwd|secret|sig|signature|token)"
        r"=([^&\s#\"'<>`]{8,})",
        1,
    ),
)

COMPILED: tuple[tuple[str, re.Pattern[str], int], ...] = tuple(
    (kind, re.compile(pattern), group) for kind, pattern, group in FORMATS
)


def kinds() -> set[str]:
    return {kind for kind, _, _ in FORMATS}

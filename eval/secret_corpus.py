"""A corpus for the secret scanner: real-format FAKE credentials and benign look-alikes, dev and held-out.

Every secret is generated here from a seeded random source in the documented format of
its kind (prefix, alphabet, length), so no real credential is ever written down and no
push-protection scanner trips over this file. Each positive case carries the exact
secret values that must not survive redaction; each benign case is text a coding agent
plausibly remembers (git SHAs, UUIDs, ULIDs, SRI and image hashes, paths, identifiers,
URLs without credentials, placeholders) that must come through untouched.

Two parts. *Dev* (`secret_cases`, `benign_cases`) is what the scanner's rules were written
against. *Held-out* (`held_out_secret_cases`, `held_out_benign_cases`) uses other sentences,
written apart from the rules, around every format in `VENDOR_FORMATS` (built from each vendor's
public description of its token: prefix, alphabet, length) and around secrets that only their
context reveals; its look-alikes are what a coding agent must keep byte for byte (go.sum lines,
lockfile checksums, pytest node ids with parameters, documented example keys, secret *locations*).
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ulid import ULID

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


@dataclass(frozen=True)
class SecretCase:
    kind: str
    text: str
    secrets: tuple[str, ...]


@dataclass(frozen=True)
class BenignCase:
    kind: str
    text: str


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _pem(rng: random.Random, label: str, lines: int = 12) -> str:
    body = "\n".join(_r(rng, B64, 64) for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n{_r(rng, B64, 20)}==\n-----END {label}-----"


def secret_cases(seed: int = 6, per_kind: int = 4) -> list[SecretCase]:
    """`per_kind` variants of each kind, each a sentence or snippet an agent might paste."""
    rng = random.Random(seed)
    out: list[SecretCase] = []

    def add(kind: str, template: str, *secrets: str) -> None:
        out.append(SecretCase(kind, template.format(*secrets), tuple(secrets)))

    for _ in range(per_kind):
        add("aws-access-key-id", "Deploy uses the CI user, access key {0} in us-east-1.", "AKIA" + _r(rng, UPPER + "234567", 16))
        add(
            "aws-secret-access-key",
            "export AWS_ACCESS_KEY_ID={0}\nexport AWS_SECRET_ACCESS_KEY={1}",
            "AKIA" + _r(rng, UPPER + "234567", 16),
            _r(rng, B64, 40),
        )
        add("github-pat-classic", "Use token {0} for the release workflow", "ghp_" + _r(rng, ALNUM, 36))
        add(
            "github-pat-fine-grained",
            "GH_TOKEN={0} (fine-grained, repo scope)",
            "github_pat_" + _r(rng, ALNUM, 22) + "_" + _r(rng, ALNUM, 59),
        )
        add("gitlab-pat", "The gitlab runner token is {0}", "glpat-" + _r(rng, ALNUM + "-_", 20))
        add(
            "slack-bot-token",
            "Slack bot: {0}",
            f"xoxb-{_r(rng, DIGITS, 11)}-{_r(rng, DIGITS, 13)}-{_r(rng, LOWER + DIGITS, 24)}",
        )
        add(
            "slack-webhook",
            "Alerts post to {0}",
            f"https://hooks.slack.com/services/T{_r(rng, UPPER + DIGITS, 8)}/B{_r(rng, UPPER + DIGITS, 10)}/{_r(rng, ALNUM, 24)}",
        )
        add("stripe-secret-key", "stripe.api_key = '{0}'", "sk_live_" + _r(rng, ALNUM, 24))
        add("stripe-restricted-key", "The webhook worker uses {0}", "rk_live_" + _r(rng, ALNUM, 99))
        add(
            "openai-key",
            "OPENAI_API_KEY={0}",
            "sk-proj-" + _r(rng, B64URL, 74) + "T3BlbkFJ" + _r(rng, B64URL, 74),
        )
        add("openai-key-legacy", "old key {0} was rotated", "sk-" + _r(rng, ALNUM, 20) + "T3BlbkFJ" + _r(rng, ALNUM, 20))
        add("anthropic-key", "ANTHROPIC_API_KEY: {0}", "sk-ant-api03-" + _r(rng, B64URL, 93) + "AA")
        add("google-api-key", "Maps key is {0}", "AIza" + _r(rng, ALNUM + "-_", 35))
        add("sendgrid-key", "mail via SendGrid with {0}", f"SG.{_r(rng, B64URL, 22)}.{_r(rng, B64URL, 43)}")
        add("twilio-api-key", "Twilio API key {0}", "SK" + _r(rng, HEX, 32))
        add("npm-token", "//registry.npmjs.org/:_authToken={0}", "npm_" + _r(rng, ALNUM, 36))
        add("pypi-token", "twine upload -u __token__ -p {0}", "pypi-AgEIcHlwaS5vcmc" + _r(rng, B64URL, 80))
        header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
        payload = base64.urlsafe_b64encode(f'{{"sub":"{rng.randint(1, 10**6)}","admin":true}}'.encode()).decode().rstrip("=")
        add("jwt", "session cookie was {0}", f"{header}.{payload}.{_r(rng, B64URL, 43)}")
        add("huggingface-token", "HF_TOKEN={0}", "hf_" + _r(rng, ALNUM, 34))
        add("discord-bot-token", "bot token {0}", f"M{_r(rng, ALNUM, 23)}.{_r(rng, ALNUM, 6)}.{_r(rng, ALNUM + '-_', 27)}")
        add("telegram-bot-token", "telegram bot {0}", f"{_r(rng, DIGITS, 9)}:{_r(rng, ALNUM + '-_', 35)}")
        add("mailchimp-key", "mailchimp {0}", _r(rng, HEX, 32) + f"-us{rng.randint(1, 20)}")
        add("square-oauth-secret", "square secret {0}", "sq0csp-" + _r(rng, ALNUM + "-_", 43))
        add(
            "azure-storage-key",
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={0};EndpointSuffix=core.windows.net",
            _r(rng, B64, 86) + "==",
        )
        add("digitalocean-token", "doctl auth init -t {0}", "dop_v1_" + _r(rng, HEX, 64))
        add("password-in-url", "DATABASE_URL=postgres://app:{0}@db.internal:5432/app", _r(rng, ALNUM, 14))
        add("password-in-url-redis", "redis cache at redis://default:{0}@cache:6379/0", _r(rng, ALNUM + "!*", 18))
        add("password-assignment", "DB_PASSWORD={0}", _r(rng, ALNUM, 6) + "#" + _r(rng, DIGITS, 3))
        add("password-assignment-yaml", "postgres:\n  user: app\n  password: \"{0}\"", _r(rng, ALNUM, 16))
        add("bearer-header", "curl -H 'Authorization: Bearer {0}' https://api.internal/v1/jobs", _r(rng, B64URL, 40))
        add("token-in-query", "webhook https://ci.example.dev/hook?token={0}&job=7", _r(rng, ALNUM, 32))
        add("generic-high-entropy", "the staging API secret is {0} — keep it out of git", _r(rng, B64, 40))
        add("rsa-private-key", "deploy key:\n{0}\n", _pem(rng, "RSA PRIVATE KEY"))
        add("openssh-private-key", "{0}", _pem(rng, "OPENSSH PRIVATE KEY", 6))
        add("pkcs8-private-key", "service account private_key: {0}", _pem(rng, "PRIVATE KEY", 8))
        add("env-token-in-prose", "run the smoke test with API_TOKEN={0} set", _r(rng, ALNUM, 28))
        add("env-secret-key-quoted", "DJANGO_SECRET_KEY = '{0}'", "django-insecure-" + _r(rng, LOWER + DIGITS + "!@#$%^&*", 40))
        add("prose-password", "the password on the staging box is {0}", _r(rng, ALNUM, 9) + "!")
        add("prose-passphrase", "passphrase {0}", "-".join(_r(rng, LOWER, 5) for _ in range(4)))
        add("cli-password-flag", "mysql --user=app --password={0} orders", _r(rng, ALNUM, 12))
        add("json-secret", '{{"client_secret": "{0}"}}', _r(rng, ALNUM + "-_", 36))
    for kind, make in VENDOR_FORMATS.items():
        for _ in range(max(1, per_kind // 2)):
            add(f"vendor:{kind}", kind.replace("-", " ") + ": {0}", make(rng))
    return out


def benign_cases(seed: int = 7, per_kind: int = 4) -> list[BenignCase]:
    """Text with ids, hashes, paths and credential-shaped words that hold no secret."""
    rng = random.Random(seed)
    out: list[BenignCase] = []

    def add(kind: str, text: str) -> None:
        out.append(BenignCase(kind, text))

    from ulid import ULID

    for _ in range(per_kind):
        sha = _r(rng, HEX, 40)
        add("git-sha", f"Fixed in commit {sha}; see {sha[:7]} for the revert.")
        add("git-sha-bare", f"cherry-pick {_r(rng, HEX, 40)} onto release/2.4")
        add("git-short-sha", f"bisect points at {_r(rng, HEX, 10)}")
        add("sha256-hex", f"artifact {_r(rng, HEX, 64)} uploaded")
        add("docker-digest", f"image ghcr.io/acme/api@sha256:{_r(rng, HEX, 64)}")
        add("uuid", f"tenant {uuid.UUID(int=rng.getrandbits(128), version=4)} owns the bucket")
        add("uuid-upper", f"RequestId: {str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper()}")
        add("ulid", f"see memory {ULID.from_timestamp(rng.randint(1_600_000_000, 1_800_000_000))} for the decision")
        digest = base64.b64encode(hashlib.sha512(rng.randbytes(32)).digest()).decode()
        add("sri-hash", f'"integrity": "sha512-{digest}"')
        img = base64.b64encode(hashlib.sha256(rng.randbytes(64)).digest()).decode()
        add("image-hash-base64", f"thumbnail image hash {img} matches the CDN copy")
        add("nix-hash", f'hash = "sha256-{base64.b64encode(hashlib.sha256(rng.randbytes(8)).digest()).decode()}";')
        add("md5-etag", f'ETag: "{_r(rng, HEX, 32)}"')
        add("path", "src/chronomem/storage/portable_export_import_helpers.py handles round trips")
        add("path-deep", "/home/dev/.cache/pypoetry/virtualenvs/acme-api-Xk3fG9pQ-py3.11/lib/python3.11/site-packages")
        add("identifier", "test_remember_redacts_secrets_before_embedding_and_storing_them passes")
        add("camelcase", "HTTPServer2ConnectionPoolManagerFactory moved to net/pool.py")
        add("url", "docs at https://github.com/acme/widget/blob/main/docs/ARCHITECTURE.md#storage-layer")
        add("url-user-no-password", "clone ssh://git@github.com/acme/widget.git or git@github.com:acme/widget.git")
        add("localhost-url", "server listens on http://127.0.0.1:8765/mcp and http://localhost:3000/api/v2")
        add("env-reference", "password = os.environ['DB_PASSWORD']")
        add("env-template", "DB_PASSWORD=${DB_PASSWORD} in docker-compose.yml")
        add("placeholder", "set OPENAI_API_KEY=<your-api-key> in .env (keys look like sk-...)")
        add("type-annotation", "def login(username: str, password: str) -> Session:")
        add("prose-password", "The password reset flow sends an email; the secret to fast tests is xdist.")
        add("prose-keyword-colon", "password: required for the admin UI; secret: rotated every 90 days")
        add("semver-and-ip", "bumped fastapi 0.110.1 -> 0.111.0; db at 10.0.3.17:5432")
        add("command", 'pytest -k "test_recall and not slow" -x --maxfail=1 -p no:cacheprovider')
        add("version-string", "node v20.11.1, npm 10.2.4, python 3.11.8, lancedb 0.40.0")
        add("base64-small", "the fixture is base64 'aGVsbG8gd29ybGQ=' (hello world)")
        add("kebab-name", "renamed the job to build-and-publish-wheels-for-manylinux2014-x86-64")
        add("email", "owner is jane.doe+ci@example.com; pager escalation-team@example.org")
        add("lockfile-line", f"resolved \"https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz#{_r(rng, HEX, 40)}\"")
        add("constant-names", "AWS_SECRET_ACCESS_KEY and GITHUB_TOKEN come from the CI secret store")
        add("random-word-mix", "Renamed ConsolidatorV2Scheduler to ConsolidationRunner in PR 4412")
        png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(48)).decode()
        add("data-uri-image", f"the favicon is inlined as data:image/png;base64,{png}")
        add("image-tag", f"deployed acme/api:2024.06.01-{_r(rng, HEX, 7)} to pod api-7d9c8b6f5-{_r(rng, LOWER + DIGITS, 5)}")
        add("traceback", 'File "/srv/app/.venv/lib/python3.11/site-packages/lancedb/table.py", line 2141, in delete')
        add("go-sum", f"github.com/google/uuid v1.6.0 h1:{base64.b64encode(rng.randbytes(32)).decode()}")
        add("pytest-param-id", f"tests/test_parse.py::test_decode[{_r(rng, ALNUM, 12)}-utf8] started failing")
        add("aws-example", "docs example: AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
        add("secret-location", "Grab the webhook signing key from Vault path `secret/data/hr/webhook-signing-key`.")
        add("secret-location-colon", "webhook signing key: 1Password vault 'Eng Shared', item 'webhook signing key'.")
        add("env-var-value-name", "Env var for the Sentry DSN: `SENTRY_DSN`.")
        add("prose-password-words", "the password is case-sensitive; the token is JWT-based and short-lived")
        add("prose-token-time", f"the token expired at 2024-05-0{rng.randint(1, 9)}T10:00:00Z and the refresh token was revoked")
        add("prose-token-commit", f"rotated the GitHub token; the new one is in 1Password (commit {_r(rng, HEX, 7)})")
        add("code-references", "password = request.form['password']; token = jwt.encode(payload, key); password: ${DB_PASSWORD:-}")
    return out


def _b32(rng: random.Random, n: int) -> str:
    return _r(rng, "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper(), n)


#: kind → how a vendor describes its token (prefix, alphabet, length), as a generator of FAKE values.
VENDOR_FORMATS: dict[str, Callable[[random.Random], str]] = {
    "aws-access-key-id": lambda r: "AKIA" + _r(r, UPPER + "234567", 16),
    "aws-session-key-id": lambda r: "ASIA" + _r(r, UPPER + "234567", 16),
    "google-api-key": lambda r: "AIza" + _r(r, ALNUM + "-_", 35),
    "google-oauth-client-secret": lambda r: "GOCSPX-" + _r(r, ALNUM + "-_", 28),
    "azure-ad-client-secret": lambda r: _r(r, ALNUM, 3) + str(r.randint(0, 9)) + "Q~" + _r(r, ALNUM + "_~.-", 34),
    "digitalocean-pat": lambda r: "dop_v1_" + _r(r, HEX, 64),
    "alibaba-access-key": lambda r: "LTAI" + _r(r, ALNUM, 20),
    "heroku-api-key-v2": lambda r: "HRKU-AA" + _r(r, ALNUM + "_-", 58),
    "vault-service-token": lambda r: "hvs." + _r(r, ALNUM + "_-", 90),
    "terraform-cloud-token": lambda r: _r(r, ALNUM, 14) + ".atlasv1." + _r(r, ALNUM + "-_=", 67),
    "doppler-token": lambda r: "dp.pt." + _r(r, ALNUM, 43),
    "databricks-token": lambda r: "dapi" + _r(r, HEX, 32),
    "supabase-token": lambda r: "sbp_" + _r(r, HEX, 40),
    "planetscale-password": lambda r: "pscale_pw_" + _r(r, ALNUM + "_", 43),
    "pulumi-token": lambda r: "pul-" + _r(r, HEX, 40),
    "github-pat": lambda r: "ghp_" + _r(r, ALNUM, 36),
    "github-oauth": lambda r: "gho_" + _r(r, ALNUM, 36),
    "github-fine-grained": lambda r: "github_pat_" + _r(r, ALNUM, 22) + "_" + _r(r, ALNUM, 59),
    "gitlab-pat": lambda r: "glpat-" + _r(r, ALNUM + "-_", 20),
    "gitlab-runner-token": lambda r: "glrt-" + _r(r, ALNUM + "-_", 20),
    "bitbucket-app-password": lambda r: "ATBB" + _r(r, ALNUM, 32),
    "atlassian-api-token": lambda r: "ATATT3xFfGF0" + _r(r, ALNUM + "-_", 180),
    "npm-token": lambda r: "npm_" + _r(r, ALNUM, 36),
    "pypi-token": lambda r: "pypi-AgEIcHlwaS5vcmc" + _r(r, B64URL, 70),
    "rubygems-key": lambda r: "rubygems_" + _r(r, HEX, 48),
    "nuget-key": lambda r: "oy2" + _r(r, LOWER + DIGITS, 43),
    "docker-pat": lambda r: "dckr_pat_" + _r(r, ALNUM + "-_", 27),
    "crates-io-token": lambda r: "cio" + _r(r, ALNUM, 32),
    "slack-bot-token": lambda r: f"xoxb-{_r(r, DIGITS, 11)}-{_r(r, DIGITS, 13)}-{_r(r, ALNUM, 24)}",
    "slack-app-token": lambda r: f"xapp-1-A{_r(r, UPPER + DIGITS, 10)}-{_r(r, DIGITS, 13)}-{_r(r, HEX, 64)}",
    "slack-webhook": lambda r: f"https://hooks.slack.com/services/T{_r(r, UPPER + DIGITS, 8)}/B{_r(r, UPPER + DIGITS, 10)}/{_r(r, ALNUM, 24)}",
    "discord-webhook": lambda r: f"https://discord.com/api/webhooks/{_r(r, DIGITS, 18)}/{_r(r, ALNUM + '-_', 68)}",
    "telegram-bot-token": lambda r: f"{_r(r, DIGITS, 10)}:AA{_r(r, ALNUM + '-_', 33)}",
    "stripe-secret-key": lambda r: "sk_live_" + _r(r, ALNUM, 99),
    "stripe-webhook-secret": lambda r: "whsec_" + _r(r, ALNUM, 32),
    "square-access-token": lambda r: "EAAA" + _r(r, ALNUM + "-_", 60),
    "shopify-access-token": lambda r: "shpat_" + _r(r, HEX, 32),
    "razorpay-key": lambda r: "rzp_live_" + _r(r, ALNUM, 14),
    "twilio-api-key": lambda r: "SK" + _r(r, HEX, 32),
    "sendgrid-key": lambda r: f"SG.{_r(r, B64URL, 22)}.{_r(r, B64URL, 43)}",
    "mailgun-key": lambda r: "key-" + _r(r, HEX, 32),
    "brevo-key": lambda r: "xkeysib-" + _r(r, HEX, 64) + "-" + _r(r, ALNUM, 16),
    "sentry-dsn": lambda r: f"https://{_r(r, HEX, 32)}@o{_r(r, DIGITS, 6)}.ingest.sentry.io/{_r(r, DIGITS, 7)}",
    "sentry-user-token": lambda r: "sntryu_" + _r(r, HEX, 64),
    "grafana-cloud-token": lambda r: "glc_" + _r(r, B64, 80) + "==",
    "grafana-service-account": lambda r: "glsa_" + _r(r, ALNUM, 32) + "_" + _r(r, HEX, 8),
    "newrelic-user-key": lambda r: "NRAK-" + _r(r, UPPER + DIGITS, 27),
    "dynatrace-token": lambda r: "dt0c01." + _r(r, UPPER + DIGITS, 24) + "." + _r(r, UPPER + DIGITS, 64),
    "postman-key": lambda r: "PMAK-" + _r(r, HEX, 24) + "-" + _r(r, HEX, 34),
    "linear-key": lambda r: "lin_api_" + _r(r, ALNUM, 40),
    "notion-token": lambda r: "ntn_" + _r(r, ALNUM, 46),
    "figma-token": lambda r: "figd_" + _r(r, ALNUM + "-_", 40),
    "airtable-pat": lambda r: "pat" + _r(r, ALNUM, 14) + "." + _r(r, HEX, 64),
    "openai-project-key": lambda r: "sk-proj-" + _r(r, B64URL, 74) + "T3BlbkFJ" + _r(r, B64URL, 74),
    "anthropic-key": lambda r: "sk-ant-api03-" + _r(r, B64URL, 93) + "AA",
    "huggingface-token": lambda r: "hf_" + _r(r, ALNUM, 34),
    "replicate-token": lambda r: "r8_" + _r(r, ALNUM, 37),
    "groq-key": lambda r: "gsk_" + _r(r, ALNUM, 52),
    "age-identity": lambda r: "AGE-SECRET-KEY-1" + _b32(r, 58),
    "jwt": lambda r: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    + base64.urlsafe_b64encode(f'{{"sub":"{r.randint(1, 10**6)}","role":"admin"}}'.encode()).decode().rstrip("=")
    + "." + _r(r, B64URL, 43),
}

#: Held-out sentences around a format's value ({v}) and the service's name ({s}); none is a scanner rule.
_HELD_OUT_TEMPLATES = (
    "note to self: {s} creds are {v} until we move them to the vault",
    "{s} — {v}",
    "Paste this into the CI settings for {s}: {v}",
    "If the nightly job fails again, the {s} value it uses is {v} (ask Priya before rotating).",
    "we hardcoded {v} in scripts/seed.sh for {s}, needs cleanup",
    "export {e}={v}",
    "{e}: \"{v}\"",
    "- {s}: `{v}`",
)


def _service(kind: str) -> str:
    return kind.replace("-", " ")


def _env(kind: str) -> str:
    return kind.upper().replace("-", "_")


def held_out_secret_cases(seed: int = 2027, per_kind: int = 2) -> list[SecretCase]:
    """Every vendor format in other sentences, plus secrets only their context reveals."""
    rng = random.Random(seed)
    out: list[SecretCase] = []
    for kind, make in VENDOR_FORMATS.items():
        for _ in range(per_kind):
            v = make(rng)
            t = rng.choice(_HELD_OUT_TEMPLATES)
            out.append(SecretCase(kind, t.format(v=v, s=_service(kind), e=_env(kind)), (v,)))

    def add(kind: str, template: str, *values: str) -> None:
        out.append(SecretCase(kind, template.format(*values), tuple(values)))

    for _ in range(per_kind):
        add("env-api-token", "Locally I run with API_TOKEN={0} so the mock server accepts requests.", _r(rng, ALNUM, 24))
        add(
            "env-django-secret-key", "settings/prod.py still has DJANGO_SECRET_KEY='{0}' checked in, fix before launch",
            _r(rng, LOWER + DIGITS + "!@#$%^&*(-_=+)", 50),
        )
        add("env-datadog-key", "DD_API_KEY={0} is the one the agent on the build box uses", _r(rng, HEX, 32))
        add("env-heroku-key", "HEROKU_API_KEY={0}", str(uuid.UUID(int=rng.getrandbits(128), version=4)))
        add("yaml-client-secret", "oauth:\n  client_id: web-portal\n  client_secret: {0}", _r(rng, ALNUM + "-_", 40))
        add("json-api-key", '{{"endpoint": "https://api.vendor.dev", "apiKey": "{0}"}}', _r(rng, ALNUM, 32))
        add(
            "prose-password",
            "the root password on the old Jenkins box is {0}, nobody has changed it since 2019",
            _r(rng, LOWER, 4) + _r(rng, DIGITS, 2) + rng.choice("!#%&") + _r(rng, UPPER, 2) + _r(rng, LOWER, 3),
        )
        add(
            "prose-passphrase",
            "The GPG passphrase for release signing is {0}.",
            "-".join(rng.choice(["purple", "otter", "lamp", "gravel", "velvet", "cactus", "orbit", "maple"]) for _ in range(4))
            + "-" + _r(rng, DIGITS, 2),
        )
        add(
            "prose-bare-passphrase",
            "For the backup disk use passphrase {0} when prompted",
            "-".join(rng.choice(["amber", "tundra", "pixel", "harbor", "quartz", "mango"]) for _ in range(5)),
        )
        add("prose-weak-password", "The staging admin password is {0} and the user is admin.", rng.choice(["Summer", "Winter", "Autumn"]) + _r(rng, DIGITS, 4) + "!")
        add("prose-db-password", "mysql -u app -p, then the password it wants is {0}", _r(rng, ALNUM, 10) + _r(rng, "@%+", 1))
        add("prose-token", "Our Cloudflare API token is {0}; it only has DNS edit rights.", _r(rng, ALNUM + "_-", 40))
        add("cli-flag-password", "psql --host db.internal --password {0} --dbname orders", _r(rng, ALNUM, 12) + "9!")
        add("connection-string", "Server=tcp:sql.internal,1433;Database=orders;User ID=app;Password={0};Encrypt=true", _r(rng, ALNUM, 14) + "#")
        add("k8s-secret-data", "apiVersion: v1\nkind: Secret\ndata:\n  password: {0}", base64.b64encode(rng.randbytes(18)).decode())
        add("basic-auth-header", "curl -H 'Authorization: Basic {0}' https://registry.internal/v2/", base64.b64encode(f"ci:{_r(rng, ALNUM, 16)}".encode()).decode())
        add("wireguard-private-key", "[Interface]\nPrivateKey = {0}\nAddress = 10.8.0.2/24", base64.b64encode(rng.randbytes(32)).decode())
        add("url-password", "REDIS_URL=rediss://default:{0}@cache.internal:6380", _r(rng, ALNUM, 20))
    return out


def held_out_benign_cases(seed: int = 2028, per_kind: int = 2) -> list[BenignCase]:
    """What a coding agent needs kept byte for byte, including high-entropy strings and secret words."""
    rng = random.Random(seed)
    out: list[BenignCase] = []

    def add(kind: str, text: str) -> None:
        out.append(BenignCase(kind, text))

    def h1() -> str:
        return "h1:" + base64.b64encode(hashlib.sha256(rng.randbytes(16)).digest()).decode()

    def sri() -> str:
        return "sha512-" + base64.b64encode(hashlib.sha512(rng.randbytes(16)).digest()).decode()

    for _ in range(per_kind):
        ver = f"v{rng.randint(0, 2)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        add("go-sum", f"golang.org/x/crypto {ver} {h1()}\ngolang.org/x/crypto {ver}/go.mod {h1()}")
        add("go-sum-prose", f"go.sum changed for github.com/stretchr/testify: {h1()} — re-run go mod tidy")
        b64id = base64.urlsafe_b64encode(rng.randbytes(9)).decode()
        add("pytest-node-id", f"flaky: tests/api/test_tokens.py::test_refresh[{b64id}-expired] fails 1 in 20 on CI")
        add("pytest-node-id-secretish", f"tests/auth/test_login.py::test_password_rules[Xk9{_r(rng, ALNUM, 8)}-too_short] is xfail now")
        add("aws-doc-example", "The AWS docs use AKIAIOSFODNN7EXAMPLE with wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY as the example pair.")
        add("aws-doc-example-env", "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
        add("cargo-lock", f'[[package]]\nname = "serde"\nversion = "1.0.{rng.randint(100, 220)}"\nchecksum = "{_r(rng, HEX, 64)}"')
        add("poetry-lock", f'{{file = "requests-2.32.3-py3-none-any.whl", hash = "sha256:{_r(rng, HEX, 64)}"}}')
        add("package-lock", f'"node_modules/left-pad": {{"version": "1.3.0", "integrity": "{sri()}"}}')
        add("pnpm-lock", f"  /lodash@4.17.21:\n    resolution: {{integrity: {sri()}}}")
        add("git-sha-context", f"the token refresh fix landed in {_r(rng, HEX, 40)}, revert {_r(rng, HEX, 12)} if it regresses")
        add("uuid-context", f"trace id {uuid.UUID(int=rng.getrandbits(128), version=4)} shows the auth service timing out on token refresh")
        add("ulid-context", f"memory {ULID.from_timestamp(rng.randint(1_600_000_000, 1_800_000_000))} records the API key rotation decision")
        add("docker-digest", f"pin python:3.12-slim@sha256:{_r(rng, HEX, 64)} in the Dockerfile")
        key = base64.b64encode(rng.randbytes(51)).decode()
        add("ssh-public-key", f"add ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{key[:43]} ci@build to authorized_keys")
        fp = base64.b64encode(hashlib.sha256(rng.randbytes(8)).digest()).decode().rstrip("=")
        add("ssh-fingerprint", f"host key fingerprint is SHA256:{fp}")
        add("go-pseudo-version", f"require example.com/lib v0.0.0-2024{rng.randint(1, 12):02d}11093000-{_r(rng, HEX, 12)}")
        add("vault-path", "Vault path `secret/data/br/pagerduty-api-token` holds the PagerDuty API token")
        add("secret-location-prose", "The Sentry auth token is kept in 1Password vault 'Eng Shared', item 'Sentry auth token'.")
        add("env-var-name", "the variable for the analytics write key is `ANALYTICS_WRITE_KEY`; set it in .env.local")
        add("secret-file-env", "SECRET_KEY_FILE=/run/secrets/django_secret_key and DB_PASSWORD_FILE=/run/secrets/db_password")
        add("github-actions-ref", "env:\n  GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n  NPM_TOKEN: ${{ secrets.NPM_TOKEN }}")
        add("password-policy", "Password must be at least 12 characters; the token expires after 3600 seconds.")
        add("token-prose", "The token bucket refills at 50 requests per second; the API key header is X-Api-Key.")
        add("placeholder-token", "in the README we show ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx as the token format")
        add("cache-key", f"the cache key is user:{rng.randint(1000, 9999)}:profile:v3 and the idempotency key column is a UUID")
        add("webpack-hash", f"main.{_r(rng, HEX, 8)}.js and vendors.{_r(rng, HEX, 20)}.chunk.js are the hashed bundles")
        add("nix-store-path", f"/nix/store/{_r(rng, '0123456789abcdfghijklmnpqrsvwxyz', 32)}-python3-3.12.4/bin/python3")
        add("s3-etag", f"S3 reports ETag \"{_r(rng, HEX, 32)}-{rng.randint(2, 40)}\" for the multipart upload")
        add("base64-fixture", f"the fixture payload is {base64.b64encode(rng.randbytes(30)).decode()} (random bytes for the decoder test)")
        add("k8s-pod", f"kubectl logs api-{_r(rng, HEX, 10)}-{_r(rng, LOWER + DIGITS, 5)} -c migrate")
        add("gpg-fingerprint", f"release tags are signed with key {_r(rng, HEX.upper(), 40)}")
        add("typed-config", "class Settings(BaseModel):\n    api_key: SecretStr\n    password: str | None = None")
        add("commit-message", f"Merge pull request #{rng.randint(100, 999)} from acme/fix-token-refresh-race ({_r(rng, HEX, 7)})")
    return out

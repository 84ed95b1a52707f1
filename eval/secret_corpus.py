"""A corpus for the secret scanner: real-format FAKE credentials and benign look-alikes.

Every secret is generated here from a seeded random source in the documented format of
its kind (prefix, alphabet, length), so no real credential is ever written down and no
push-protection scanner trips over this file. Each positive case carries the exact
secret values that must not survive redaction; each benign case is text a coding agent
plausibly remembers (git SHAs, UUIDs, ULIDs, SRI and image hashes, paths, identifiers,
URLs without credentials, placeholders) that must come through untouched.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from dataclasses import dataclass

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
    return out

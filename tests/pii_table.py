"""The PII test table: sentences that hold personal data or a secret, and look-alikes that do
not (versions, dates, order numbers, hashes, prices, ports). Invented values; test card and
IBAN numbers are the issuers' published test numbers."""

from __future__ import annotations

from agentcore.domain.pii import PiiKind

E, P, C, IB, N, IP, K = (
    PiiKind.EMAIL,
    PiiKind.PHONE,
    PiiKind.CARD,
    PiiKind.IBAN,
    PiiKind.NATIONAL_ID,
    PiiKind.IP_ADDRESS,
    PiiKind.API_KEY,
)

# (text, the kinds it holds)
POSITIVES: list[tuple[str, list[PiiKind]]] = [
    ("Send the invoice to maria.lopez@example.com by Friday.", [E]),
    ("Her work address is j.doe+billing@mail.acme-corp.co.uk.", [E]),
    ("Contact: ops_team@sub.example.org", [E]),
    ("You can reach Tom on +1 415-555-0134 after 5pm.", [P]),
    ("Call me at (212) 555-0187 tomorrow.", [P]),
    ("His mobile is +44 7911 123456.", [P]),
    ("The Berlin office number is +49 30 901820.", [P]),
    ("Support line: 1-800-555-0199.", [P]),
    ("Pay with card 4111 1111 1111 1111, expiry 12/28.", [C]),
    ("The Mastercard on file is 5555-5555-5555-4444.", [C]),
    ("Amex 378282246310005 was declined.", [C]),
    ("Card number 6011111111111117 for the refund.", [C]),
    ("Wire it to IBAN DE89 3704 0044 0532 0130 00 please.", [IB]),
    ("Account GB82WEST12345698765432 belongs to the landlord.", [IB]),
    ("French account: FR14 2004 1010 0505 0001 3M02 606.", [IB]),
    ("My SSN is 123-45-6789.", [N]),
    ("SSN: 536228726 on the tax form.", [N]),
    ("Social security number 536-22-8726 is on file.", [N]),
    ("The server is at 192.168.10.24 on the office network.", [IP]),
    ("Blocked traffic from 203.0.113.77 after the scan.", [IP]),
    ("The IPv6 address is 2001:db8:85a3::8a2e:370:7334.", [IP]),
    ("SSH to 10.0.0.5 and restart the worker.", [IP]),
    ("Use the key sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab in the notebook.", [K]),
    ("OPENAI_API_KEY=sk-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", [K]),
    ("The token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 expired.", [K]),
    ("Deploy with github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGH12", [K]),
    ("The access key id is AKIAIOSFODNN7EXAMPLE.", [K]),
    ("Temporary creds ASIAY34FZKBOKMUTVV7A were issued.", [K]),
    ("The bot posts with xoxb-123456789012-abcdefghijklmnop.", [K]),
    ("Maps key AIzaSyA-1234567890abcdefghijklmnopqrstu.", [K]),
    ("Stripe key sk_live_4eC39HqLyjWDarjtT1zdp7dc must be rotated.", [K]),
    (
        "Header was Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        [K],
    ),
    ("Use Bearer 8f14e45fceea167a5a36dedd4bea2543a1b2c3d4 for the webhook.", [K]),
    ("Email anna@example.com or call +1 202-555-0143.", [E, P]),
    ("Refund to 4242424242424242 and notify billing@example.net.", [C, E]),
    ("Login from 198.51.100.23 with key AKIAI44QH8DHBEXAMPLE.", [IP, K]),
    ("The tenant's IBAN NL91ABNA0417164300 and phone +31 20 794 9999.", [IB, P]),
    ("Ping me: dev.ops@example.io", [E]),
    ("Reach the landlord at 020 7946 0958 (UK) or +442079460958.", [P]),
    ("Her SSN 078-05-1121 was typed into the chat by mistake.", [N]),
    ("The card ending 0004: 4000 0000 0000 0002 was used twice.", [C]),
    ("The VPN endpoint 172.16.254.1 is down.", [IP]),
]

NEGATIVES: list[str] = [
    "Upgrade to version 1.2.3.4 of the driver before Friday.",
    "Release v10.0.0.1 fixed the memory leak.",
    "The meeting is on 2024-03-15 at 10:30.",
    "Order 1234567890123456 shipped yesterday.",  # 16 digits, fails the Luhn check
    "The commit 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b introduced the bug.",
    "Invoice INV-2024-000123 totals $1,234.56.",
    "The build took 123.45 seconds on 4 cores.",
    "Port 8080 and port 5432 are open on the host.",
    "Tracking number 1Z999AA10123456784 is in transit.",
    "ISBN 978-3-16-148410-0 is the second edition.",
    "The ratio was 10:1 and the p95 was 209 ms.",
    "Call the function send_email(user) after saving.",
    "The decorator @login_required protects the view.",
    "Mention @maria in the ticket, not by e-mail.",
    "The password policy requires at least 12 characters.",
    "Reset your password via the link in the settings page.",
    "The secret sauce is caching the lookups.",
    "Use the sk- prefix check in the validator.",
    "The AWS region is eu-west-1 and the bucket is logs-2024.",
    "UUID 123e4567-e89b-12d3-a456-426614174000 identifies the job.",
    "Serial 123-45-678 is not a valid code.",
    "The area code 000-12-3456 is reserved.",  # not a valid SSN
    "Postal code 90210 and apartment 4B.",
    "The test suite ran 143 tests, 2 failed.",
    "Version 2.0.1 of numpy is pinned.",
    "The matrix is 1024 x 768 pixels.",
    "Temperature was 21.5 degrees at 12:00.",
    "Coordinates 52.5200, 13.4050 mark the office.",
    "Price: EUR 1 299,00 incl. VAT.",
    "The queue holds 1,204,339 rows after the export.",
    "Use git checkout -b fix/vat-rounding-709 for the change.",
    "Ticket API-1841 and ticket BILL-1013 are related.",
    "The SHA of the script starts with cf84c783f9.",
    "Connect with psql -h db.internal -p 6543 -U app.",
    "The release branch is cut at 14:00 on 2026-12-01.",
    "Drop 25% of the traffic to the canary.",
    "The token bucket refills 600 per minute with a burst of 68.",
    "Error code E1234-5678 appears in the logs.",
    "The schema has 14 columns and 3 indexes.",
    "Phone formats like XXX-XXX-XXXX are validated.",
    "IBAN fields are validated with the mod 97 check.",
    "The word password appears in the docs 3 times.",
    "We store secrets in the vault, never in the repo.",
    "Localhost is 127.0.0 in the broken config.",
]

# (text, holds a secret that blocks promotion)
SECRETS: list[tuple[str, bool]] = [
    ("The database password is Hunter2!2024", True),
    ("db_password=s3cr3t-Pa55 in the .env file", True),
    ("-----BEGIN RSA PRIVATE KEY----- MIIEpAIBAAKCAQEA...", True),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", True),
    ("Connect to postgres://app:pa55w0rd@db.internal:5432/main", True),
    ("client_secret: 'x9Fq-28Lm!'", True),
    ("The password policy requires at least 12 characters.", False),
    ("Reset your password via the link in the settings page.", False),
    ("We store secrets in the vault, never in the repo.", False),
    ("The password is stored in the vault.", False),
]

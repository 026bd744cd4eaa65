package pgstore

// SchemaVersion is the version of the tables this package reads and
// writes. Open creates them in a database that has none and upgrades older
// versions; it refuses a newer one.
const SchemaVersion = 2

// MinReadVersion is the oldest version a read-only Open reads without
// upgrading: the versions since added tables only (eval_runs), and a
// store of an older version reads as one that has none of their rows.
const MinReadVersion = 1

// migrations[i] brings a store from version i to version i+1. Each runs in
// one transaction with the store's migration lock held, so two processes
// opening a new store at once create it once.
var migrations = []string{
	// 0 -> 1: the journal, the CAS, the worlds' leases, the workers and
	// the inbox.
	`
CREATE TABLE demiurge_meta (
	key   text COLLATE "C" PRIMARY KEY,
	value text NOT NULL
);

CREATE TABLE journal_heads (
	world text COLLATE "C" PRIMARY KEY,
	seq   bigint NOT NULL CHECK (seq > 0),
	hash  bytea  NOT NULL
);

CREATE TABLE journal_records (
	world   text COLLATE "C" NOT NULL,
	seq     bigint NOT NULL,
	kind    text   NOT NULL,
	payload bytea  NOT NULL,
	prev    bytea  NOT NULL,
	hash    bytea  NOT NULL,
	PRIMARY KEY (world, seq)
);

CREATE TABLE cas_blobs (
	digest bytea  PRIMARY KEY,
	size   bigint NOT NULL,
	data   bytea            -- NULL: the bytes are in cas_chunks
);

CREATE TABLE cas_chunks (
	digest bytea   NOT NULL,
	n      integer NOT NULL,
	data   bytea   NOT NULL,
	PRIMARY KEY (digest, n)
);

CREATE TABLE worlds (
	world    text COLLATE "C" PRIMARY KEY,
	manifest bytea,
	owner    text,
	token    bigint NOT NULL DEFAULT 0,
	expires  timestamptz,
	created  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE workers (
	id   text COLLATE "C" PRIMARY KEY,
	seen timestamptz NOT NULL
);

CREATE TABLE inbox (
	id       bigserial PRIMARY KEY,
	world    text COLLATE "C" NOT NULL,
	manifest bytea,
	schema   text  NOT NULL,
	value    bytea NOT NULL,
	posted   timestamptz NOT NULL DEFAULT now(),
	seq      bigint,
	error    text
);
CREATE INDEX inbox_waiting ON inbox (world, id) WHERE seq IS NULL AND error IS NULL;

-- demiurge_append appends records to a world if its head is (exp_seq,
-- exp_hash) and, when owner is not NULL, the world's lease is owner's
-- with token: the expected-head and fencing checks and the writes are
-- one statement of the caller's transaction. A failed check raises
-- SQLSTATE DM001 (head conflict; DETAIL: "seq hexhash" of the head) or
-- DM002 (lease not held; DETAIL: "owner token" of the lease).
CREATE FUNCTION demiurge_append(p_world text, p_exp_seq bigint, p_exp_hash bytea,
		p_kinds text[], p_payloads bytea[], p_prevs bytea[], p_hashes bytea[],
		p_owner text, p_token bigint) RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
	n        int := coalesce(array_length(p_kinds, 1), 0);
	cur_seq  bigint;
	cur_hash bytea;
	l_owner  text;
	l_token  bigint;
BEGIN
	IF p_owner IS NOT NULL THEN
		SELECT owner, token INTO l_owner, l_token FROM worlds WHERE world = p_world FOR SHARE;
		IF l_owner IS DISTINCT FROM p_owner OR l_token IS DISTINCT FROM p_token THEN
			RAISE EXCEPTION USING ERRCODE = 'DM002', MESSAGE = 'lease not held',
				DETAIL = coalesce(l_owner, '') || ' ' || coalesce(l_token, 0)::text;
		END IF;
	END IF;
	IF n > 0 AND p_exp_seq = 0 THEN
		INSERT INTO journal_heads (world, seq, hash) VALUES (p_world, n, p_hashes[n])
			ON CONFLICT (world) DO NOTHING;
	ELSIF n > 0 THEN
		UPDATE journal_heads SET seq = p_exp_seq + n, hash = p_hashes[n]
			WHERE world = p_world AND seq = p_exp_seq AND hash = p_exp_hash;
	END IF;
	IF n = 0 OR NOT FOUND THEN
		SELECT seq, hash INTO cur_seq, cur_hash FROM journal_heads WHERE world = p_world;
		IF n = 0 AND coalesce(cur_seq, 0) = p_exp_seq AND (p_exp_seq = 0 OR cur_hash = p_exp_hash) THEN
			RETURN p_exp_seq;
		END IF;
		RAISE EXCEPTION USING ERRCODE = 'DM001', MESSAGE = 'journal head conflict',
			DETAIL = coalesce(cur_seq, 0)::text || ' ' || encode(coalesce(cur_hash, ''::bytea), 'hex');
	END IF;
	INSERT INTO journal_records (world, seq, kind, payload, prev, hash)
		SELECT p_world, p_exp_seq + i, p_kinds[i], p_payloads[i], p_prevs[i], p_hashes[i]
		FROM generate_subscripts(p_kinds, 1) AS i;
	RETURN p_exp_seq + n;
END
$fn$;
`,
	// 1 -> 2: the reports of demiurge eval's runs, which compare and the
	// web view read.
	`
CREATE TABLE eval_runs (
	run     text COLLATE "C" PRIMARY KEY,
	started timestamptz NOT NULL,
	summary bytea NOT NULL,
	report  bytea NOT NULL,
	kept    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX eval_runs_started ON eval_runs (started DESC, run DESC);
`,
}

#!/bin/sh
# Sorts the objects the storage unit tests wrote into one seed directory per
# fuzz harness, by what their key names them (docs/FORMAT.md "Store
# layout"), and adds the hand-made seeds.
#   sh fuzz/sort-seeds.sh DUMP HANDMADE OUT
# DUMP: the test directories CX_TEST_DUMP_SEEDS kept; HANDMADE: fuzz/seeds
# (one directory per harness); OUT: build-fuzz/seeds.  Seeds are named by
# their content's hash (so duplicates collapse); objects over 256 KiB are
# left out (small inputs fuzz faster), as are more than 300 per harness.
dump=$1
hand=$2
out=$3
max_bytes=262144
max_seeds=300

# take HARNESS FIND-ARGS...: the matching objects of DUMP into OUT/HARNESS.
take() {
	dir=$out/$1
	shift
	mkdir -p "$dir"
	find "$dump" -type f -size -${max_bytes}c "$@" | sort | head -n $max_seeds |
		while read -r f; do
			cp "$f" "$dir/$(sha1sum < "$f" | cut -c1-16)"
		done
}

take fuzz_fragment -path '*/data/*.parquet'
take fuzz_manifest -path '*/_versions/*.manifest'
take fuzz_shard_manifest -name '*.shard'
take fuzz_wal -name '*.wal'
take fuzz_gc_record -name '*.retention'
take fuzz_key_index -name '*.cxk'
take fuzz_iceberg -path '*/iceberg/*' \( -name '*.json' -o -name '*.avro' \)

# A fragment's footer (FileMetaData) for the metadata harness, and its
# engine schema JSON (key-value metadata, stored as it is) for the schema
# harness.
mkdir -p "$out/fuzz_parquet_meta" "$out/fuzz_pq_schema"
for f in $(ls "$out/fuzz_fragment" | head -n 40); do
	p=$out/fuzz_fragment/$f
	size=$(stat -c %s "$p")
	[ "$size" -gt 12 ] || continue
	len=$(od -An -tu4 -j $((size - 8)) -N4 "$p" | tr -d ' ')
	[ "$len" -lt "$size" ] || continue
	tail -c $((len + 8)) "$p" | head -c "$len" > "$out/fuzz_parquet_meta/footer-$f"
	grep -ao '\[{"name":[^]]*}\]' "$out/fuzz_parquet_meta/footer-$f" | head -n 1 \
		> "$out/fuzz_pq_schema/$f"
	[ -s "$out/fuzz_pq_schema/$f" ] || rm -f "$out/fuzz_pq_schema/$f"
done

for d in "$hand"/*/; do
	[ -d "$d" ] || continue
	mkdir -p "$out/$(basename "$d")"
	cp "$d"* "$out/$(basename "$d")/"
done
for d in "$out"/*/; do
	echo "$(basename "$d"): $(ls "$d" | wc -l) seeds"
done

#!/usr/bin/env bash
# t_watchdog.sh - --timeout: a rank that waits forever (its peer never
# sends: rank 0's last SEND_F deleted, validation skipped) is caught, every
# rank is aborted, and the message names the rank and the op waited on.
. "$(dirname "$0")/lib.sh"
gen "$TMP/hang.json" --pp 2 --mb 4 --schedule 1f1b
delete_line "$TMP/hang.json" \
    "$(op_line "$TMP/hang.json" 0 '"SEND_F", "stage": 0, "mb": 3,')"
start=$(date +%s)
zbexec 2 "$TMP/hang.json" --model "$MODEL" --no-validate --timeout 2
waited='\((RECV_F stage 1 mb 3 from 0|RECV_B stage 0 mb 3 from 1)\)'
# The cuda backend waits for a receive on the device, so its host runs on
# to STEP and is caught waiting for whichever message it drains first.
if [ "$BACKEND" = cuda ]; then
    waited='\([A-Z_]+ stage [0-9]+ mb [0-9]+ [a-z]+ [01]\)'
fi
expect "watchdog: aborts a hung run" fail \
    "rank [01]: watchdog: no progress for .* waiting for op [0-9]+ $waited" \
    "$ERR"
if [ $(($(date +%s) - start)) -ge 60 ]; then
    not_ok "watchdog: took $(($(date +%s) - start)) s"
fi
done_testing

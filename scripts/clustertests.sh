#!/usr/bin/env bash
# clustertests.sh prints the -run pattern of the tests of one package that
# scripts/test.sh runs a second time on the Redis Cluster: the engine's
# pipeline, decision and exactly-once tests, and the Slack pipeline's.
# README.md lists them ("Tests on the Redis Cluster").
set -euo pipefail
# Each name must be a test of the package, or the run would quietly test
# nothing.
cd "$(dirname "$0")/.."
case "${1:?usage: clustertests.sh bot|slack}" in
bot)
	dir=bot
	tests=(
		TestSlowModelIsPlannedOnce TestKilledWhilePostingIsAnsweredAfterRestart
		TestApproveDuringRevisionDropsTheRevision TestConcurrentRevisesMakeOneVersion
		TestCrashedApproverClaimIsReleasedPromptly TestApprovalIsSeenBeforeRedisRecordsIt
		TestReclaimedRequestsArePlannedOnce TestReplannedRequestKeepsThePlanSavedFirst
		TestFailedExecutionGivesTheClaimBack TestDecisionWhilePreviewIsPostedRedrawsIt
		TestCancelBesideASlowApprove TestExpiryBesideASlowApprove TestLostCloseGivesRedisTheWinner
		TestLatePostIsPostedOnce TestPostingIsBoundedAcrossReclaims TestTakenOverRequestIsNotPostedTwice
	)
	;;
slack)
	dir=adapters/slack
	tests=(
		TestSlackEndToEnd TestFailedSubmitThenRetryMakesOneRequest TestSlashCommandReplayIsOneRequest
		TestFloodFromOnePersonIsToldOnce TestFloodFromManyPeopleIsToldAFew TestLatePreviewIsFoundNotPostedAgain
		TestAnswerEndsAStreamADeadReplicaNeverRecorded
	)
	;;
*) echo "clustertests.sh: no list for $1" >&2; exit 2 ;;
esac
for t in "${tests[@]}"; do
	grep -q "^func $t(" "$dir"/*_test.go || { echo "clustertests.sh: $dir has no test $t" >&2; exit 1; }
done
IFS='|'
echo "^(${tests[*]})\$"

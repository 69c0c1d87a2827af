// Package figures is the job queue's figures, in the one shape that
// /status, the dashboard, the metrics and `lockworker status` show: Queue;
// and a partition's owner beside its queue's, as `lockworker partitions`,
// the dashboard and the metrics show them: Partition; and a schedule with
// its last and next ticks: Schedule (jobs.Router.Schedules). Package jobs
// reads the figures from Redis (jobs.Queue.Stats,
// jobs.Router.PartitionStats).
//
// It is a package of its own, importing no package of lockworker, so that
// the document of /status (package statusdoc) can name the figures
// without importing the queue: the test rigs decode /status, and the
// queue's own tests use those rigs.
package figures

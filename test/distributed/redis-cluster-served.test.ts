/**
 * Distributed mode served on a Redis Cluster (issue 36): a cap race across two web processes,
 * an anchor and a settlement receipt through the queue, `admin purge` on every master
 * (test/distributed/cluster-deployment.ts).
 */
import { clusterDeploymentSuite } from "./cluster-deployment.js";

clusterDeploymentSuite("served");
